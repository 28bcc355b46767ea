package openstack_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// A Keystone of the Bundle author's own (route-gc's authURL is theirs to write)
// that answers without end fails the login at responselimit's bounds: before,
// gophercloud read the whole answer, into memory and, for an error status, into
// the error's message (and so into the Bundle's status).
func TestNewBoundsKeystoneAnswers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		prefix      string // of the answer, followed by answerMiB MiB of x
		answerMiB   int
		maxErrorLen int
		wantErr     error // nil: any error, bounded
		readAll     bool  // the answer is within its bound: read whole
	}{
		// gophercloud keeps an error answer's body as its message, whatever
		// reading it returned: bounded, the message is.
		{"an error answer", http.StatusInternalServerError, "", 16, responselimit.MaxErrorBody + 1024, nil, false},
		{"an answer", http.StatusCreated, `{"token":{"catalog":[],"methods":["`, responselimit.MaxBody>>20 + 16, 4096, responselimit.ErrTooLarge, false},
		// A status gophercloud did not expect (Keystone answers 201): it keeps
		// the whole body, up to an answer's bound, as the error's message.
		{"an answer of a status not expected", http.StatusOK, "", 10, responselimit.MaxErrorBody + 5<<10, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Subject-Token", "token")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.prefix)
				chunk := strings.Repeat("x", 1<<20)
				for range tc.answerMiB {
					n, err := io.WriteString(w, chunk)
					served.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			// Reading 64 MiB takes the race detector on a busy machine longer than
			// the default request timeout.
			_, err := openstack.New(context.Background(), openstack.Config{AuthURL: srv.URL + "/v3", Timeout: 5 * time.Minute,
				Credentials: openstack.Credentials{ApplicationCredentialID: "id", ApplicationCredentialSecret: "secret"}})
			switch {
			case err == nil:
				t.Fatal("the login succeeded")
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("error %.300v, want %v", err, tc.wantErr)
			case len(err.Error()) > tc.maxErrorLen:
				t.Errorf("the error's message is %d bytes long, want at most %d", len(err.Error()), tc.maxErrorLen)
			}
			if n := served.Load(); !tc.readAll && n >= int64(tc.answerMiB)<<20 {
				t.Errorf("all %d MiB of the answer were read", n>>20)
			}
		})
	}
}

// newSimClient is a Client of a simulator started with cfg.
func newSimClient(t *testing.T, cfg openstacksim.Config) (*openstack.Client, *openstacksim.Server) {
	t.Helper()
	sim := openstacksim.New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	c := sim.Config()
	client, err := openstack.New(context.Background(), openstack.Config{AuthURL: openstacksim.AuthURL(srv.URL), Region: cfg.Region,
		Credentials: openstack.Credentials{ApplicationCredentialID: c.ApplicationCredentialID, ApplicationCredentialSecret: c.ApplicationCredentialSecret}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return client, sim
}

// The listing asks for no page size: the first request has no parameter (Nova
// lists a down cell's stubs to no other), Nova answers its max_limit and links
// the next page by a marker, and Pages counts what was read — an empty last
// page too (a full page links one), since it was a marker request as well.
func TestListServersPages(t *testing.T) {
	for _, tc := range []struct {
		servers, maxLimit, pages int
	}{
		{3, 0, 1}, // Nova's max_limit 1000
		{3, 4, 1},
		{4, 4, 2}, // a full page links a next one, empty
		{5, 2, 3},
		{6, 2, 4},
	} {
		t.Run(fmt.Sprintf("%d servers, max_limit %d", tc.servers, tc.maxLimit), func(t *testing.T) {
			client, sim := newSimClient(t, openstacksim.Config{MaxLimit: tc.maxLimit})
			for i := range tc.servers {
				sim.AddServerAt(fmt.Sprintf("node-%d", i), fmt.Sprintf("10.0.0.%d", i+1))
			}
			list, err := client.ListServers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if list.Count != tc.servers || len(list.Addresses) != tc.servers || list.Pages != tc.pages {
				t.Errorf("listed %d servers, %d addresses in %d pages; want %d in %d", list.Count, len(list.Addresses), list.Pages, tc.servers, tc.pages)
			}
			calls := sim.Calls(openstacksim.OpListServers)
			if len(calls) != tc.pages {
				t.Fatalf("%d listing requests, want %d", len(calls), tc.pages)
			}
			if calls[0].Path != "/compute/v2.1/servers/detail" || calls[0].Microversion != openstack.MicroversionDownCells {
				t.Errorf("first request: GET %s at %q, want no parameter, at %s", calls[0].Path, calls[0].Microversion, openstack.MicroversionDownCells)
			}
			for _, c := range calls[1:] {
				if !strings.HasPrefix(c.Path, "/compute/v2.1/servers/detail?marker=") || c.Microversion != openstack.MicroversionDownCells {
					t.Errorf("GET %s at %q, want Nova's next link (a marker alone), at %s", c.Path, c.Microversion, openstack.MicroversionDownCells)
				}
			}
		})
	}
}

// The client knows the project its token is scoped to, whatever the kind of
// credentials, and a router's project: route-gc holds one against the other
// (Nova lists the token's project's servers only).
func TestProjects(t *testing.T) {
	const other = "c1a5e7a2b4d64f0e8a9b1c2d3e4f5a6b"
	sim := openstacksim.New(openstacksim.Config{Admin: true})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	c := sim.Config()
	r := sim.AddRouter("", "cluster")
	if err := sim.SetRouterProject(r.ID, other); err != nil {
		t.Fatal(err)
	}
	for name, creds := range map[string]openstack.Credentials{
		"application credential": {ApplicationCredentialID: c.ApplicationCredentialID, ApplicationCredentialSecret: c.ApplicationCredentialSecret},
		"password":               {Username: c.Username, Password: c.Password, ProjectID: c.ProjectID, UserDomainName: c.UserDomainName},
	} {
		t.Run(name, func(t *testing.T) {
			client, err := openstack.New(context.Background(), openstack.Config{AuthURL: openstacksim.AuthURL(srv.URL), Credentials: creds})
			if err != nil {
				t.Fatal(err)
			}
			if got := client.ProjectID(); got != c.ProjectID {
				t.Errorf("ProjectID = %q, want %q", got, c.ProjectID)
			}
			router, err := client.Router(context.Background(), r.ID)
			if err != nil || router.ProjectID != other {
				t.Errorf("Router = %+v, %v; want project %s", router, err, other)
			}
		})
	}
}

// rewritingServer serves sim over HTTP, each answer's body passed through
// rewrite: an OpenStack that answers in an older or other shape.
func rewritingServer(t *testing.T, sim *openstacksim.Server, rewrite func(r *http.Request, body string) string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, rewrite(r, rec.Body.String()))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newClientOf is a Client of srv, serving sim, with sim's application credential.
func newClientOf(t *testing.T, sim *openstacksim.Server, srv *httptest.Server) *openstack.Client {
	t.Helper()
	c := sim.Config()
	client, err := openstack.New(context.Background(), openstack.Config{AuthURL: openstacksim.AuthURL(srv.URL),
		Credentials: openstack.Credentials{ApplicationCredentialID: c.ApplicationCredentialID, ApplicationCredentialSecret: c.ApplicationCredentialSecret}})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// A Neutron that names a router's project by tenant_id alone (before
// project_id was added) still says whose the router is.
func TestRouterProjectFromTenantID(t *testing.T) {
	const other = "c1a5e7a2b4d64f0e8a9b1c2d3e4f5a6b"
	sim := openstacksim.New(openstacksim.Config{Admin: true})
	r := sim.AddRouter("", "cluster")
	if err := sim.SetRouterProject(r.ID, other); err != nil {
		t.Fatal(err)
	}
	srv := rewritingServer(t, sim, func(req *http.Request, body string) string {
		if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/routers/"+r.ID) {
			return body
		}
		without := strings.Replace(body, `"project_id":"`+other+`",`, "", 1)
		if without == body {
			t.Errorf("the router's answer names no project_id: %s", body)
		}
		return without
	})
	if router, err := newClientOf(t, sim, srv).Router(context.Background(), r.ID); err != nil || router.ProjectID != other {
		t.Errorf("Router = %+v, %v; want project %s", router, err, other)
	}
}

// A compute version document that states its highest microversion as
// max_version, not version, is read too: the listing asks for 2.69.
func TestComputeMaxVersion(t *testing.T) {
	sim := openstacksim.New(openstacksim.Config{})
	sim.AddServerAt("node-1", "10.180.0.3")
	srv := rewritingServer(t, sim, func(req *http.Request, body string) string {
		if req.Method != http.MethodGet || strings.TrimSuffix(req.URL.Path, "/") != "/compute/v2.1" {
			return body
		}
		renamed := strings.Replace(body, `"version":"`+openstacksim.DefaultComputeMaxVersion+`"`, `"max_version":"`+openstacksim.DefaultComputeMaxVersion+`"`, 1)
		if renamed == body {
			t.Errorf("the version document states no version: %s", body)
		}
		return renamed
	})
	if _, err := newClientOf(t, sim, srv).ListServers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls := sim.Calls(openstacksim.OpListServers); len(calls) != 1 || calls[0].Microversion != openstack.MicroversionDownCells {
		t.Errorf("listing calls %+v, want one at microversion %s", calls, openstack.MicroversionDownCells)
	}
}

// A token scoped to no project (a domain-scoped or unscoped one) lists no
// project's servers: the login fails, before any endpoint is used.
func TestNewNeedsAProjectToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Subject-Token", "token")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"token":{"methods":["password"],"domain":{"id":"default","name":"Default"},"catalog":[]}}`)
	}))
	defer srv.Close()
	_, err := openstack.New(context.Background(), openstack.Config{AuthURL: srv.URL + "/v3",
		Credentials: openstack.Credentials{ApplicationCredentialID: "id", ApplicationCredentialSecret: "secret"}})
	if err == nil || !strings.Contains(err.Error(), "the token is scoped to no project") {
		t.Errorf("New = %v, want the token refused", err)
	}
}

// With no region configured, the client uses the one region in which the
// catalog has both a network and a compute endpoint: gophercloud alone takes
// each service's first endpoint, and could read the router in one region and
// list the servers of another. Several such regions, or none, are an error
// that names them; a configured region is used as it is.
func TestRegion(t *testing.T) {
	const one, two = openstacksim.DefaultRegion, "RegionTwo"
	for _, tc := range []struct {
		name    string
		region  string // configured
		regions map[string][]string
		want    string // the region of every network and compute call
		wantErr string
	}{
		{"one region", "", nil, one, ""},
		// Keystone lists compute's RegionTwo endpoint first: the first-of-each
		// choice mixed the regions.
		{"compute in two regions, network in one", "", map[string][]string{"compute": {two, one}}, one, ""},
		{"network in two regions, compute in one", "", map[string][]string{"network": {two, one}}, one, ""},
		{"both in two regions", "", map[string][]string{"network": {one, two}, "compute": {two, one}}, "",
			`openstack.region is empty, and the catalog has network and compute endpoints in the regions "RegionOne", "RegionTwo": set openstack.region`},
		{"in no region both", "", map[string][]string{"compute": {two}}, "",
			`no region has both a network and a compute endpoint (network in "RegionOne", compute in "RegionTwo"): set openstack.region`},
		{"both in two regions, one configured", two, map[string][]string{"network": {one, two}, "compute": {one, two}}, two, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := openstacksim.New(openstacksim.Config{CatalogRegions: tc.regions})
			srv := httptest.NewServer(sim)
			defer srv.Close()
			c := sim.Config()
			r := sim.AddRouter("", "cluster")
			sim.AddServerAt("node-1", "10.0.0.1")
			client, err := openstack.New(context.Background(), openstack.Config{AuthURL: openstacksim.AuthURL(srv.URL), Region: tc.region,
				Credentials: openstack.Credentials{ApplicationCredentialID: c.ApplicationCredentialID, ApplicationCredentialSecret: c.ApplicationCredentialSecret}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("New = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Router(context.Background(), r.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := client.ListServers(context.Background()); err != nil {
				t.Fatal(err)
			}
			calls := sim.Calls(openstacksim.OpNetworkVersions, openstacksim.OpGetRouter, openstacksim.OpComputeVersion, openstacksim.OpListServers)
			if len(calls) != 4 {
				t.Fatalf("calls = %+v, want the network's version document, the router, the compute's version document and a listing", calls)
			}
			for _, call := range calls {
				if call.Region != tc.want {
					t.Errorf("%s %s in region %q, want %q", call.Method, call.Path, call.Region, tc.want)
				}
			}
		})
	}
}

// A rate-limited request (429) is sent again after the Retry-After the cloud
// asks for, up to openstack.MaxRateLimitWait: the listing succeeds. One told to
// wait longer fails at once with the cloud's answer, so that the call's budget
// is not spent asleep (the plugin's call is retried later); so does one refused
// more than openstack.MaxRateLimitRetries times in a row.
func TestRateLimitedRequests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     openstacksim.Fault
		wantErr   bool
		wantCalls int
	}{
		{"retried after Retry-After", openstacksim.Fault{Status: http.StatusTooManyRequests, Times: 2, RetryAfter: "0"}, false, 3},
		{"retried without Retry-After", openstacksim.Fault{Status: http.StatusTooManyRequests, Times: 1}, false, 2},
		{"told to wait too long", openstacksim.Fault{Status: http.StatusTooManyRequests, Times: 1, RetryAfter: "3600"}, true, 1},
		{"refused again and again", openstacksim.Fault{Status: http.StatusTooManyRequests, Times: 100, RetryAfter: "0"}, true, openstack.MaxRateLimitRetries + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, sim := newSimClient(t, openstacksim.Config{})
			sim.AddServerAt("vm-1", "10.0.0.5")
			sim.Inject(openstacksim.OpListServers, tc.fault)
			servers, err := client.ListServers(context.Background())
			switch {
			case tc.wantErr && err == nil:
				t.Fatalf("ListServers() = %+v, want the 429", servers)
			case tc.wantErr && !strings.Contains(err.Error(), "429"):
				t.Errorf("err = %v, want the cloud's 429", err)
			case !tc.wantErr && err != nil:
				t.Fatalf("ListServers: %v", err)
			case !tc.wantErr && servers.Count != 1:
				t.Errorf("Count = %d, want 1", servers.Count)
			}
			if got := sim.Count(openstacksim.OpListServers); got != tc.wantCalls {
				t.Errorf("%d listing requests, want %d", got, tc.wantCalls)
			}
		})
	}
}

// A front that answers the guarded whole-list PUT with a redirect is not
// followed: Go's client would send it again as a GET, whose 200 gophercloud
// took for the update's (a route reported removed while it stays), and would
// send X-Auth-Token, which it strips from no redirect, wherever it points.
func TestRedirectNotFollowed(t *testing.T) {
	sim := openstacksim.New(openstacksim.Config{})
	r := sim.AddRouter("", "r", openstacksim.Route{Destination: "198.19.1.0/24", NextHop: "10.0.0.5"})
	var redirected atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/routers/"+r.ID+"/") {
			redirected.Add(1)
		}
		if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/routers/"+r.ID) {
			http.Redirect(w, req, req.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		sim.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	c := newClientOf(t, sim, srv)
	if err := c.SetRoutes(context.Background(), r.ID, nil, r.RevisionNumber); err == nil {
		t.Fatal("SetRoutes = nil, want the redirect's error")
	}
	if n := redirected.Load(); n != 0 {
		t.Errorf("the redirect was followed (%d requests to it)", n)
	}
	if got, _ := sim.Router(r.ID); len(got.Routes) != 1 {
		t.Errorf("routes = %v, want the one route kept", got.Routes)
	}
}
