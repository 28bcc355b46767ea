package routegc_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

// Credentials Keystone refuses once a client holds a token (a password rotated
// in Keystone before the Secret, an application credential deleted or expired:
// Keystone revokes the tokens) are not sent again at every call: every failed
// pass and every due Tombstone's removal re-authenticated, a dozen failed logins
// in the first ten seconds and one per Bundle and Tombstone every 30 s after,
// enough for Keystone's lockout_failure_attempts to lock the account for good.
// The refusal is plugin.ErrCredentialsRefused, as at the first login; the
// Secret updated to the new credentials is used at once.
func TestRefusedReauthenticationNotRetriedAtOnce(t *testing.T) {
	c := openstacksim.New(openstacksim.Config{}).Config()
	password := func(p string) map[string]string {
		return map[string]string{routegc.KeyUsername: c.Username, routegc.KeyPassword: p, routegc.KeyProjectID: c.ProjectID, routegc.KeyUserDomainName: c.UserDomainName}
	}
	applicationCredential := func(secret string) map[string]string {
		return map[string]string{routegc.KeyApplicationCredentialID: c.ApplicationCredentialID, routegc.KeyApplicationCredentialSecret: secret}
	}
	keep, orphan := route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.9")
	orphanID := orphan.Destination + "->" + orphan.NextHop
	for _, creds := range []struct {
		name          string
		secret        map[string]string
		rotate        func(*openstacksim.Server)
		rotatedSecret map[string]string
	}{
		{"password", password(c.Password), func(s *openstacksim.Server) { s.SetCredentials(c.Username, "rotated") }, password("rotated")},
		{"application credential", applicationCredential(c.ApplicationCredentialSecret), func(s *openstacksim.Server) { s.SetApplicationCredentialSecret("rotated") }, applicationCredential("rotated")},
	} {
		for _, call := range []struct {
			name string
			do   func(f *fixture, i int) error
			want []openstacksim.Route // the routes once the call succeeded
		}{
			{"Plan", func(f *fixture, i int) error {
				_, err := f.plan(t0.Add(time.Duration(i) * time.Hour)) // an hour apart: no cached result
				return err
			}, []openstacksim.Route{keep, orphan}},
			{"DeleteExternal", func(f *fixture, _ int) error { return f.remove(orphanID) }, []openstacksim.Route{keep}},
		} {
			t.Run(fmt.Sprintf("%s/%s", creds.name, call.name), func(t *testing.T) {
				f := newFixture(t, openstacksim.Config{}, creds.secret)
				f.sim.AddRouter(routerID, "cluster", keep, orphan)
				f.sim.AddServerAt("node-1", "10.180.0.3")
				f.mustPlan(t0)
				creds.rotate(f.sim)
				for i := 1; i <= 3; i++ {
					if err := call.do(f, i); !errors.Is(err, plugin.ErrCredentialsRefused) || !errors.Is(err, openstack.ErrUnauthorized) {
						t.Errorf("call %d after the rotation: %v, want plugin.ErrCredentialsRefused and openstack.ErrUnauthorized", i, err)
					}
				}
				if n := f.sim.Count(openstacksim.OpCreateToken); n != 2 {
					t.Errorf("%d logins, want 2: the first, and one refused re-authentication for three calls within %v", n, plugin.FailedClientRetry)
				}
				f.setSecret(creds.rotatedSecret)
				if err := call.do(f, 4); err != nil {
					t.Fatalf("call with the Secret updated: %v", err)
				}
				if n := f.sim.Count(openstacksim.OpCreateToken); n != 3 {
					t.Errorf("%d logins, want 3: the Secret updated logs in at once", n)
				}
				if got := f.routes(); !reflect.DeepEqual(got, call.want) {
					t.Errorf("routes = %v, want %v", got, call.want)
				}
			})
		}
	}
}

// setSecret replaces the data of the credentials Secret.
func (f *fixture) setSecret(data map[string]string) {
	f.t.Helper()
	ctx := context.Background()
	var s corev1.Secret
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: f.bundle.Namespace, Name: secretName}, &s); err != nil {
		f.t.Fatal(err)
	}
	s.Data = map[string][]byte{}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	if err := f.k8s.Update(ctx, &s); err != nil {
		f.t.Fatal(err)
	}
}
