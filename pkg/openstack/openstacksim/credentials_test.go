package openstacksim_test

import (
	"net/http"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// Credentials changed in Keystone (a password rotated, an application
// credential made anew) revoke the tokens issued: the old token and the old
// credentials get 401, the new credentials a token, and Config tells them.
func TestCredentialsChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*openstacksim.Server)
		auth   func(openstacksim.Config) map[string]any
		secret func(openstacksim.Config) string // the one changed
	}{
		{
			name:   "password",
			change: func(s *openstacksim.Server) { s.SetCredentials(openstacksim.DefaultUsername, "rotated") },
			auth: func(c openstacksim.Config) map[string]any {
				return passwordAuth(c.Username, c.UserDomainName, c.Password, c.ProjectID)
			},
			secret: func(c openstacksim.Config) string { return c.Password },
		},
		{
			name:   "application credential",
			change: func(s *openstacksim.Server) { s.SetApplicationCredentialSecret("rotated") },
			auth: func(c openstacksim.Config) map[string]any {
				return appCredAuth(c.ApplicationCredentialID, c.ApplicationCredentialSecret)
			},
			secret: func(c openstacksim.Config) string { return c.ApplicationCredentialSecret },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{})
			old := tc.auth(f.sim.Config())
			f.login()
			tc.change(f.sim)
			if status, _, _ := f.do(http.MethodGet, "/network/v2.0/extensions", nil, nil); status != http.StatusUnauthorized {
				t.Errorf("a token issued before the change: %d, want 401 (revoked)", status)
			}
			f.token = ""
			if status, _, _ := f.do(http.MethodPost, "/identity/v3/auth/tokens", old, nil); status != http.StatusUnauthorized {
				t.Errorf("the old credentials: %d, want 401", status)
			}
			c := f.sim.Config()
			if got := tc.secret(c); got != "rotated" {
				t.Errorf("Config() tells the secret %q, want the new one", got)
			}
			status, hdr, _ := f.do(http.MethodPost, "/identity/v3/auth/tokens", tc.auth(c), nil)
			if status != http.StatusCreated {
				t.Fatalf("the new credentials: %d, want 201", status)
			}
			f.token = hdr.Get("X-Subject-Token")
			if status, _, _ := f.do(http.MethodGet, "/network/v2.0/extensions", nil, nil); status != http.StatusOK {
				t.Errorf("a token of the new credentials: %d, want 200", status)
			}
		})
	}
}
