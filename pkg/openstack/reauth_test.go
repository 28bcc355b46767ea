package openstack_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/refusedlogin"
)

// A re-authentication Keystone refuses (the application credential deleted or
// expired, a password rotated: Keystone revokes the tokens) is an error matching
// ErrUnauthorized, from every call, and is not sent again for
// refusedlogin.Retry: each call answers with the refusal meanwhile. Each
// call re-authenticated, a failed login every time, enough for Keystone's
// lockout_failure_attempts to lock the account.
func TestRefusedReauthenticationNotSentAgainAtOnce(t *testing.T) {
	route := openstack.Route{DestinationCIDR: "198.19.1.0/24", NextHop: "10.180.0.3"}
	for _, tc := range []struct {
		name string
		call func(c *openstack.Client, routerID string) error
	}{
		{"Router", func(c *openstack.Client, id string) error {
			_, err := c.Router(context.Background(), id)
			return err
		}},
		{"HasExtension", func(c *openstack.Client, _ string) error {
			_, err := c.HasExtension(context.Background(), openstack.ExtensionAtomicExtraRoutes)
			return err
		}},
		{"RemoveRoutes", func(c *openstack.Client, id string) error {
			return c.RemoveRoutes(context.Background(), id, []openstack.Route{route})
		}},
		{"SetRoutes", func(c *openstack.Client, id string) error {
			return c.SetRoutes(context.Background(), id, nil, 1)
		}},
		{"ListServers", func(c *openstack.Client, _ string) error {
			_, err := c.ListServers(context.Background())
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := openstacksim.New(openstacksim.Config{})
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			r := sim.AddRouter("", "cluster", openstacksim.Route{Destination: route.DestinationCIDR, NextHop: route.NextHop})
			sim.AddServerAt("node-1", route.NextHop)
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
			secret := sim.Config().ApplicationCredentialSecret
			c, err := openstack.New(context.Background(), openstack.Config{AuthURL: openstacksim.AuthURL(srv.URL), Now: clk.Now,
				Credentials: openstack.Credentials{ApplicationCredentialID: sim.Config().ApplicationCredentialID, ApplicationCredentialSecret: secret}})
			if err != nil {
				t.Fatal(err)
			}
			wantLogins := func(step string, want int) {
				t.Helper()
				if n := sim.Count(openstacksim.OpCreateToken); n != want {
					t.Errorf("%s: %d logins, want %d", step, n, want)
				}
			}

			sim.SetApplicationCredentialSecret("rotated")
			for i := range 3 {
				if err := tc.call(c, r.ID); !errors.Is(err, openstack.ErrUnauthorized) {
					t.Errorf("call %d: %v, want ErrUnauthorized", i+1, err)
				}
			}
			wantLogins("three calls refused", 2)

			clk.SetTime(clk.Now().Add(refusedlogin.Retry))
			if err := tc.call(c, r.ID); !errors.Is(err, openstack.ErrUnauthorized) {
				t.Errorf("after %v: %v, want ErrUnauthorized", refusedlogin.Retry, err)
			}
			wantLogins("a call after the wait", 3)

			// Keystone takes the secret again (the rotation undone): the next
			// re-authentication after the wait succeeds.
			sim.SetApplicationCredentialSecret(secret)
			if err := tc.call(c, r.ID); !errors.Is(err, openstack.ErrUnauthorized) {
				t.Errorf("within the wait: %v, want the refusal", err)
			}
			wantLogins("a call within the wait", 3)
			clk.SetTime(clk.Now().Add(refusedlogin.Retry))
			if err := tc.call(c, r.ID); err != nil {
				t.Errorf("with the secret taken again: %v", err)
			}
			wantLogins("the secret taken again", 4)
		})
	}
}
