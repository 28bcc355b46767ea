package routegc

import (
	"context"
	"errors"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A router is judged against the servers of the credentials' project only: one
// of another project is refused, and so is one whose project Neutron did not
// say (the simulator always says it).
func TestSameProject(t *testing.T) {
	sim := openstacksim.New(openstacksim.Config{})
	base, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	c := sim.Config()
	api, err := openstack.New(context.Background(), openstack.Config{AuthURL: openstacksim.AuthURL(base),
		Credentials: openstack.Credentials{ApplicationCredentialID: c.ApplicationCredentialID, ApplicationCredentialSecret: c.ApplicationCredentialSecret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		project string
		wantErr bool
	}{
		{c.ProjectID, false},
		{"c1a5e7a2b4d64f0e8a9b1c2d3e4f5a6b", true},
		{"", true},
	} {
		err := sameProject(api, &openstack.Router{ID: "r", ProjectID: tc.project})
		if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrOtherProject)) {
			t.Errorf("sameProject(router of project %q) = %v, want an ErrOtherProject: %v", tc.project, err, tc.wantErr)
		}
	}
}
