package openstacksim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

type fixture struct {
	t     *testing.T
	sim   *openstacksim.Server
	base  string
	token string
}

func newFixture(t *testing.T, cfg openstacksim.Config) *fixture {
	t.Helper()
	sim := openstacksim.New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return &fixture{t: t, sim: sim, base: srv.URL}
}

// do sends a request with the fixture's token and decodes the JSON answer.
func (f *fixture) do(method, path string, body any, header map[string]string) (int, http.Header, map[string]any) {
	f.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.base+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if f.token != "" {
		req.Header.Set("X-Auth-Token", f.token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			f.t.Fatalf("%s %s: body %q is not JSON: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, resp.Header, out
}

func appCredAuth(id, secret string) map[string]any {
	return map[string]any{"auth": map[string]any{"identity": map[string]any{
		"methods": []string{"application_credential"}, "application_credential": map[string]any{"id": id, "secret": secret}}}}
}

func passwordAuth(user, domain, password, project string) map[string]any {
	return map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": user, "domain": map[string]any{"name": domain}, "password": password}}},
		"scope": map[string]any{"project": map[string]any{"id": project}},
	}}
}

func (f *fixture) login() {
	f.t.Helper()
	c := f.sim.Config()
	status, hdr, _ := f.do(http.MethodPost, "/identity/v3/auth/tokens", appCredAuth(c.ApplicationCredentialID, c.ApplicationCredentialSecret), nil)
	if status != http.StatusCreated || hdr.Get("X-Subject-Token") == "" {
		f.t.Fatalf("login: %d, token %q", status, hdr.Get("X-Subject-Token"))
	}
	f.token = hdr.Get("X-Subject-Token")
}

func routesBody(routes ...openstacksim.Route) map[string]any {
	return map[string]any{"router": map[string]any{"routes": routes}}
}

func TestKeystoneTokens(t *testing.T) {
	f := newFixture(t, openstacksim.Config{})
	c := f.sim.Config()
	for _, tc := range []struct {
		name string
		body any
		want int
	}{
		{"application credential", appCredAuth(c.ApplicationCredentialID, c.ApplicationCredentialSecret), 201},
		{"password", passwordAuth(c.Username, c.UserDomainName, c.Password, c.ProjectID), 201},
		{"wrong secret", appCredAuth(c.ApplicationCredentialID, "nope"), 401},
		{"wrong password", passwordAuth(c.Username, c.UserDomainName, "nope", c.ProjectID), 401},
		{"wrong domain", passwordAuth(c.Username, "Other", c.Password, c.ProjectID), 401},
		{"other project", passwordAuth(c.Username, c.UserDomainName, c.Password, "other"), 401},
		{"no identity", map[string]any{"auth": map[string]any{}}, 400},
		{"unsupported method", map[string]any{"auth": map[string]any{"identity": map[string]any{"methods": []string{"totp"}}}}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := f.do(http.MethodPost, "/identity/v3/auth/tokens", tc.body, nil)
			if status != tc.want {
				t.Fatalf("status %d, want %d: %v", status, tc.want, body)
			}
			if status != 201 {
				if e, _ := body["error"].(map[string]any); e["code"] != float64(status) || e["title"] == "" {
					t.Errorf("error body = %v, want Keystone's {error:{code,message,title}}", body)
				}
				return
			}
			if hdr.Get("X-Subject-Token") == "" {
				t.Error("no X-Subject-Token")
			}
			token := body["token"].(map[string]any)
			var types []string
			for _, e := range token["catalog"].([]any) {
				entry := e.(map[string]any)
				types = append(types, entry["type"].(string))
				for _, ep := range entry["endpoints"].([]any) {
					if u := ep.(map[string]any)["url"].(string); !strings.HasPrefix(u, f.base+"/") || ep.(map[string]any)["region"] != "RegionOne" {
						t.Errorf("endpoint %v is not on the simulator in RegionOne", ep)
					}
				}
			}
			if !reflect.DeepEqual(types, []string{"identity", "network", "compute"}) {
				t.Errorf("catalog types = %q", types)
			}
			if token["project"].(map[string]any)["id"] != c.ProjectID || token["expires_at"] == "" {
				t.Errorf("token = %v", token)
			}
		})
	}
	// Without a token, every API call is 401.
	f.token = "bogus"
	if status, _, _ := f.do(http.MethodGet, "/network/v2.0/extensions", nil, nil); status != 401 {
		t.Errorf("bogus token: %d", status)
	}
	f.login()
	if status, _, _ := f.do(http.MethodGet, "/network/v2.0/extensions", nil, nil); status != 200 {
		t.Errorf("valid token: %d", status)
	}
	f.sim.ExpireTokens()
	if status, _, _ := f.do(http.MethodGet, "/network/v2.0/extensions", nil, nil); status != 401 {
		t.Errorf("expired token: %d", status)
	}
}

func TestNeutronVersionsAndExtensions(t *testing.T) {
	f := newFixture(t, openstacksim.Config{})
	status, _, body := f.do(http.MethodGet, "/network/", nil, nil) // no token needed, as in Neutron
	versions, _ := body["versions"].([]any)
	if status != 200 || len(versions) != 1 || versions[0].(map[string]any)["id"] != "v2.0" {
		t.Errorf("version document = %d %v", status, body)
	}
	f.login()
	hasAtomic := func() bool {
		_, _, body := f.do(http.MethodGet, "/network/v2.0/extensions", nil, nil)
		for _, e := range body["extensions"].([]any) {
			if e.(map[string]any)["alias"] == openstacksim.ExtensionAtomicExtraRoutes {
				return true
			}
		}
		return false
	}
	if !hasAtomic() {
		t.Error("extraroute-atomic not listed by default")
	}
	if status, _, body := f.do(http.MethodGet, "/network/v2.0/extensions/extraroute-atomic", nil, nil); status != 200 || body["extension"].(map[string]any)["alias"] != "extraroute-atomic" {
		t.Errorf("GET extension = %d %v", status, body)
	}
	f.sim.SetAtomic(false)
	if hasAtomic() {
		t.Error("extraroute-atomic listed while disabled")
	}
	status, _, body = f.do(http.MethodGet, "/network/v2.0/extensions/extraroute-atomic", nil, nil)
	if status != 404 || body["NeutronError"] == nil {
		t.Errorf("GET disabled extension = %d %v, want 404 with a NeutronError", status, body)
	}
	r := f.sim.AddRouter("", "r")
	if status, _, _ := f.do(http.MethodPut, "/network/v2.0/routers/"+r.ID+"/remove_extraroutes", routesBody(), nil); status != 404 {
		t.Errorf("remove_extraroutes without the extension = %d, want 404", status)
	}
}

func routesOf(body map[string]any) ([]openstacksim.Route, float64) {
	router := body["router"].(map[string]any)
	var out []openstacksim.Route
	for _, r := range router["routes"].([]any) {
		m := r.(map[string]any)
		out = append(out, openstacksim.Route{Destination: m["destination"].(string), NextHop: m["nexthop"].(string)})
	}
	return out, router["revision_number"].(float64)
}

func TestRouters(t *testing.T) {
	f := newFixture(t, openstacksim.Config{MaxRoutes: 3})
	f.login()
	a, b, c := openstacksim.Route{Destination: "198.19.1.0/24", NextHop: "10.0.0.1"}, openstacksim.Route{Destination: "198.19.2.0/24", NextHop: "10.0.0.2"}, openstacksim.Route{Destination: "198.19.3.0/24", NextHop: "10.0.0.3"}
	r := f.sim.AddRouter("", "cluster", a)
	path := "/network/v2.0/routers/" + r.ID

	status, _, body := f.do(http.MethodGet, path, nil, nil)
	if routes, rev := routesOf(body); status != 200 || !reflect.DeepEqual(routes, []openstacksim.Route{a}) || rev != 1 {
		t.Fatalf("GET = %d %v", status, body)
	}
	if status, _, body := f.do(http.MethodGet, "/network/v2.0/routers/nope", nil, nil); status != 404 || body["NeutronError"].(map[string]any)["type"] != "RouterNotFound" {
		t.Errorf("GET unknown = %d %v", status, body)
	}

	// PUT replaces the list; If-Match guards it.
	status, _, body = f.do(http.MethodPut, path, routesBody(a, b), map[string]string{"If-Match": "revision_number=1"})
	if routes, rev := routesOf(body); status != 200 || !reflect.DeepEqual(routes, []openstacksim.Route{a, b}) || rev != 2 {
		t.Errorf("PUT = %d %v", status, body)
	}
	status, _, body = f.do(http.MethodPut, path, routesBody(a), map[string]string{"If-Match": "revision_number=1"})
	if status != 412 || body["NeutronError"].(map[string]any)["type"] != "RevisionNumberConstraintFailed" {
		t.Errorf("stale PUT = %d %v", status, body)
	}
	if status, _, _ := f.do(http.MethodPut, path, routesBody(a), map[string]string{"If-Match": "etag"}); status != 400 {
		t.Errorf("unsupported If-Match = %d", status)
	}
	if status, _, _ := f.do(http.MethodPut, path, routesBody(openstacksim.Route{Destination: "x", NextHop: "10.0.0.1"}), nil); status != 400 {
		t.Errorf("invalid route = %d", status)
	}
	if status, _, body := f.do(http.MethodPut, path, routesBody(a, b, c, openstacksim.Route{Destination: "198.19.4.0/24", NextHop: "10.0.0.4"}), nil); status != 400 || body["NeutronError"].(map[string]any)["type"] != "RoutesExhausted" {
		t.Errorf("too many routes = %d %v", status, body)
	}

	// add/remove_extraroutes: add is idempotent, removing a missing route is fine.
	status, _, body = f.do(http.MethodPut, path+"/add_extraroutes", routesBody(b, c), nil)
	if routes, rev := routesOf(body); status != 200 || !reflect.DeepEqual(routes, []openstacksim.Route{a, b, c}) || rev != 3 {
		t.Errorf("add_extraroutes = %d %v", status, body)
	}
	status, _, body = f.do(http.MethodPut, path+"/remove_extraroutes", routesBody(b, openstacksim.Route{Destination: "198.19.9.0/24", NextHop: "10.0.0.9"}), nil)
	if routes, rev := routesOf(body); status != 200 || !reflect.DeepEqual(routes, []openstacksim.Route{a, c}) || rev != 4 {
		t.Errorf("remove_extraroutes = %d %v", status, body)
	}
	if got, _ := f.sim.Router(r.ID); got.RevisionNumber != 4 || !reflect.DeepEqual(got.Routes, []openstacksim.Route{a, c}) {
		t.Errorf("Router = %+v", got)
	}
	// A call that changes nothing leaves revision_number alone, as Neutron does.
	status, _, body = f.do(http.MethodPut, path+"/remove_extraroutes", routesBody(b), nil)
	if routes, rev := routesOf(body); status != 200 || !reflect.DeepEqual(routes, []openstacksim.Route{a, c}) || rev != 4 {
		t.Errorf("remove_extraroutes of a missing route = %d %v, want revision 4 kept", status, body)
	}
	status, _, body = f.do(http.MethodPut, path, routesBody(c, a), nil)
	if _, rev := routesOf(body); status != 200 || rev != 4 {
		t.Errorf("PUT of the same routes in another order = %d %v, want revision 4 kept", status, body)
	}

	// The call log records every request with its If-Match and status.
	var log []string
	for _, c := range f.sim.Calls(openstacksim.OpUpdateRouter) {
		log = append(log, fmt.Sprintf("%s %s %q %d", c.Method, c.Path, c.IfMatch, c.Status))
	}
	want := []string{
		fmt.Sprintf(`PUT %s "revision_number=1" 200`, path), fmt.Sprintf(`PUT %s "revision_number=1" 412`, path),
		fmt.Sprintf(`PUT %s "etag" 400`, path), fmt.Sprintf(`PUT %s "" 400`, path), fmt.Sprintf(`PUT %s "" 400`, path),
		fmt.Sprintf(`PUT %s "" 200`, path),
	}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("call log = %q, want %q", log, want)
	}
}

// CatalogRegions puts a service's endpoints in several regions, in order;
// another region's endpoints serve the same state under /regions/<region>,
// the call log names the region a request used, and links stay in it.
func TestCatalogRegions(t *testing.T) {
	f := newFixture(t, openstacksim.Config{MaxLimit: 1, CatalogRegions: map[string][]string{openstacksim.ServiceCompute: {"RegionTwo", "RegionOne"}}})
	c := f.sim.Config()
	_, _, token := f.do(http.MethodPost, "/identity/v3/auth/tokens", appCredAuth(c.ApplicationCredentialID, c.ApplicationCredentialSecret), nil)
	endpoints := map[string][]string{}
	for _, e := range token["token"].(map[string]any)["catalog"].([]any) {
		entry := e.(map[string]any)
		for _, ep := range entry["endpoints"].([]any) {
			if ep := ep.(map[string]any); ep["interface"] == "public" {
				endpoints[entry["type"].(string)] = append(endpoints[entry["type"].(string)], ep["region_id"].(string)+" "+strings.TrimPrefix(ep["url"].(string), f.base))
			}
		}
	}
	want := map[string][]string{
		"identity": {"RegionOne /identity/v3"},
		"network":  {"RegionOne /network"},
		"compute":  {"RegionTwo /regions/RegionTwo/compute/v2.1", "RegionOne /compute/v2.1"},
	}
	if !reflect.DeepEqual(endpoints, want) {
		t.Errorf("public endpoints = %q, want %q", endpoints, want)
	}
	f.login()
	f.sim.AddServerAt("node-1", "10.0.0.1")
	f.sim.AddServerAt("node-2", "10.0.0.2")
	status, _, body := f.do(http.MethodGet, "/regions/RegionTwo/compute/v2.1/servers/detail", nil, nil)
	links, _ := body["servers_links"].([]any)
	if status != 200 || len(body["servers"].([]any)) != 1 || len(links) != 1 ||
		!strings.HasPrefix(links[0].(map[string]any)["href"].(string), f.base+"/regions/RegionTwo/compute/v2.1/servers/detail?marker=") {
		t.Errorf("listing in RegionTwo = %d %v, want a page linking the next in RegionTwo", status, body)
	}
	f.do(http.MethodGet, "/compute/v2.1/servers/detail", nil, nil)
	var log []string
	for _, call := range f.sim.Calls(openstacksim.OpListServers) {
		log = append(log, call.Region+" "+call.Path)
	}
	if want := []string{"RegionTwo /compute/v2.1/servers/detail", "RegionOne /compute/v2.1/servers/detail"}; !reflect.DeepEqual(log, want) {
		t.Errorf("call log = %q, want %q", log, want)
	}
}

// A router of another project (SetRouterProject): Neutron's policy shows it,
// with its project_id, to an admin, who may update it too; to a member of
// another project it does not exist, whatever the call (404).
func TestRouterOfAnotherProject(t *testing.T) {
	const other = "c1a5e7a2b4d64f0e8a9b1c2d3e4f5a6b"
	a := openstacksim.Route{Destination: "198.19.1.0/24", NextHop: "10.0.0.1"}
	for _, tc := range []struct {
		name   string
		admin  bool
		status int
	}{
		{"member", false, 404},
		{"admin", true, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{Admin: tc.admin})
			c := f.sim.Config()
			_, _, token := f.do(http.MethodPost, "/identity/v3/auth/tokens", appCredAuth(c.ApplicationCredentialID, c.ApplicationCredentialSecret), nil)
			var roles []string
			for _, r := range token["token"].(map[string]any)["roles"].([]any) {
				roles = append(roles, r.(map[string]any)["name"].(string))
			}
			if slices.Contains(roles, "admin") != tc.admin {
				t.Errorf("the token's roles = %q", roles)
			}
			f.login()
			r := f.sim.AddRouter("", "cluster", a)
			if err := f.sim.SetRouterProject(r.ID, other); err != nil {
				t.Fatal(err)
			}
			path := "/network/v2.0/routers/" + r.ID
			status, _, body := f.do(http.MethodGet, path, nil, nil)
			if status != tc.status {
				t.Fatalf("GET = %d %v, want %d", status, body, tc.status)
			}
			if router, _ := body["router"].(map[string]any); tc.admin && (router["project_id"] != other || router["tenant_id"] != other) {
				t.Errorf("GET = %v, want project_id and tenant_id %s", body, other)
			}
			if !tc.admin && body["NeutronError"].(map[string]any)["type"] != "RouterNotFound" {
				t.Errorf("GET = %v, want RouterNotFound", body)
			}
			for _, op := range []string{"", "/remove_extraroutes", "/add_extraroutes"} {
				if status, _, body := f.do(http.MethodPut, path+op, routesBody(a), nil); status != tc.status {
					t.Errorf("PUT %s = %d %v, want %d", path+op, status, body, tc.status)
				}
			}
		})
	}
	f := newFixture(t, openstacksim.Config{})
	if err := f.sim.SetRouterProject("nope", other); err == nil {
		t.Error("SetRouterProject of no router succeeded")
	}
}

// OnRoutesChanged is told of every change of a router's routes, by the API and
// by the test's own calls alike, with the routes before and after.
func TestOnRoutesChanged(t *testing.T) {
	var changes []string
	f := newFixture(t, openstacksim.Config{OnRoutesChanged: func(router string, before, after []openstacksim.Route) {
		changes = append(changes, fmt.Sprintf("%s: %d -> %d", router, len(before), len(after)))
	}})
	f.login()
	a, b := openstacksim.Route{Destination: "198.19.1.0/24", NextHop: "10.0.0.1"}, openstacksim.Route{Destination: "198.19.2.0/24", NextHop: "10.0.0.2"}
	r := f.sim.AddRouter("r1", "cluster", a)
	if err := f.sim.AddRoutes(r.ID, b); err != nil {
		t.Fatal(err)
	}
	if status, _, body := f.do(http.MethodPut, "/network/v2.0/routers/r1/remove_extraroutes", routesBody(a), nil); status != 200 {
		t.Fatalf("remove_extraroutes = %d %v", status, body)
	}
	if status, _, body := f.do(http.MethodPut, "/network/v2.0/routers/r1", routesBody(a), nil); status != 200 {
		t.Fatalf("PUT = %d %v", status, body)
	}
	if want := []string{"r1: 1 -> 2", "r1: 2 -> 1", "r1: 1 -> 1"}; !reflect.DeepEqual(changes, want) {
		t.Errorf("changes = %q, want %q", changes, want)
	}
}

func TestNovaServerPages(t *testing.T) {
	f := newFixture(t, openstacksim.Config{MaxLimit: 3})
	f.login()
	var ids []string
	for i := range 5 {
		s := f.sim.AddServer(openstacksim.NovaServer{Name: fmt.Sprintf("node-%d", i), Addresses: map[string][]openstacksim.Address{
			"net": {{Addr: fmt.Sprintf("10.0.0.%d", i)}, {Addr: fmt.Sprintf("172.24.4.%d", i), Type: "floating"}}}})
		ids = append([]string{s.ID}, ids...) // newest first
	}
	var seen []string
	path := "/compute/v2.1/servers/detail?limit=2"
	for pages := 0; path != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		status, _, body := f.do(http.MethodGet, path, nil, nil)
		if status != 200 {
			t.Fatalf("GET %s = %d %v", path, status, body)
		}
		for _, s := range body["servers"].([]any) {
			srv := s.(map[string]any)
			seen = append(seen, srv["id"].(string))
			addrs := srv["addresses"].(map[string]any)["net"].([]any)
			if len(addrs) != 2 || addrs[1].(map[string]any)["OS-EXT-IPS:type"] != "floating" || addrs[0].(map[string]any)["version"] != float64(4) {
				t.Errorf("addresses = %v", addrs)
			}
		}
		path = ""
		if links, ok := body["servers_links"].([]any); ok {
			link := links[0].(map[string]any)
			if link["rel"] != "next" {
				t.Errorf("link = %v", link)
			}
			path = strings.TrimPrefix(link["href"].(string), f.base)
		}
	}
	if !reflect.DeepEqual(seen, ids) {
		t.Errorf("paged ids = %q, want %q", seen, ids)
	}
	// The page size is capped by max_limit, and is max_limit without a limit:
	// Nova's next link then carries the marker alone.
	if _, _, body := f.do(http.MethodGet, "/compute/v2.1/servers/detail?limit=100", nil, nil); len(body["servers"].([]any)) != 3 || body["servers_links"] == nil {
		t.Errorf("limit above max_limit: %v", body)
	}
	status, _, body := f.do(http.MethodGet, "/compute/v2.1/servers/detail", nil, nil)
	links, _ := body["servers_links"].([]any)
	if status != 200 || len(body["servers"].([]any)) != 3 || len(links) != 1 || links[0].(map[string]any)["href"] != f.base+"/compute/v2.1/servers/detail?marker="+ids[2] {
		t.Errorf("without a limit: %v, want a page of max_limit (3) linking ?marker=%s", body, ids[2])
	}
	// An unknown marker is 400.
	if status, _, body := f.do(http.MethodGet, "/compute/v2.1/servers/detail?marker=nope", nil, nil); status != 400 || body["badRequest"] == nil {
		t.Errorf("unknown marker = %d %v", status, body)
	}
	status, _, body = f.do(http.MethodPost, "/compute/v2.1/servers", map[string]any{"server": map[string]any{
		"name": "node-9", "imageRef": "img", "flavorRef": "1", "networks": []map[string]string{{"uuid": "net", "fixed_ip": "10.0.0.9"}}}}, nil)
	created, _ := body["server"].(map[string]any)
	if status != 202 || created["id"] == "" {
		t.Errorf("POST server = %d %v", status, body)
	}
	if _, _, body := f.do(http.MethodGet, "/compute/v2.1/servers/detail?limit=1", nil, nil); body["servers"].([]any)[0].(map[string]any)["id"] != created["id"] {
		t.Errorf("the new server is not listed first: %v", body)
	}
	if status, _, _ := f.do(http.MethodPost, "/compute/v2.1/servers", map[string]any{"server": map[string]any{}}, nil); status != 400 {
		t.Errorf("POST server without a name = %d", status)
	}
	if status, _, _ := f.do(http.MethodDelete, "/compute/v2.1/servers/"+ids[0], nil, nil); status != 204 {
		t.Errorf("DELETE server = %d", status)
	}
	if status, _, body := f.do(http.MethodDelete, "/compute/v2.1/servers/"+ids[0], nil, nil); status != 404 || body["itemNotFound"] == nil {
		t.Errorf("DELETE gone server = %d %v", status, body)
	}
}

func TestFaultsAndOutages(t *testing.T) {
	f := newFixture(t, openstacksim.Config{})
	f.login()
	r := f.sim.AddRouter("", "r")
	get := func() int {
		status, _, _ := f.do(http.MethodGet, "/network/v2.0/routers/"+r.ID, nil, nil)
		return status
	}
	f.sim.Inject(openstacksim.OpGetRouter, openstacksim.Fault{Status: 500, Times: 2, Skip: 1})
	if got := []int{get(), get(), get(), get()}; !reflect.DeepEqual(got, []int{200, 500, 500, 200}) {
		t.Errorf("statuses with Skip 1, Times 2 = %v", got)
	}
	// A request refused before its operation (an expired token's 401) does
	// not use up a fault: the next one that reaches the operation gets it.
	f.sim.Inject(openstacksim.OpGetRouter, openstacksim.Fault{Status: 503, Times: 1})
	f.sim.ExpireTokens()
	first := get()
	f.login()
	if got := []int{first, get(), get()}; !reflect.DeepEqual(got, []int{401, 503, 200}) {
		t.Errorf("statuses of a fault injected with the token expired = %v, want [401 503 200]", got)
	}
	f.sim.SetOutage(openstacksim.ServiceNetwork, true)
	if status := get(); status != 503 {
		t.Errorf("network outage: %d", status)
	}
	if status, _, _ := f.do(http.MethodGet, "/compute/v2.1/servers/detail", nil, nil); status != 200 {
		t.Errorf("compute during a network outage: %d", status)
	}
	f.sim.SetOutage("", true)
	if status, _, body := f.do(http.MethodGet, "/compute/v2.1/servers/detail", nil, nil); status != 503 || body["serviceUnavailable"] == nil {
		t.Errorf("compute during a full outage: %d %v", status, body)
	}
	f.sim.SetOutage("", false)
	if status := get(); status != 200 {
		t.Errorf("after the outage: %d", status)
	}
	ran := 0
	f.sim.Before(openstacksim.OpGetRouter, func() { ran++ })
	get()
	get()
	if ran != 1 {
		t.Errorf("a Before hook ran %d times, want once", ran)
	}
	if status, _, _ := f.do(http.MethodPost, "/network/v2.0/routers/"+r.ID, nil, nil); status != 405 {
		t.Errorf("POST router = %d, want 405", status)
	}
	if status, _, _ := f.do(http.MethodGet, "/nowhere", nil, nil); status != 404 || f.sim.Count(openstacksim.OpUnknown) != 2 {
		t.Errorf("unknown path = %d, %d unknown calls", status, f.sim.Count(openstacksim.OpUnknown))
	}
}

// Nova's version documents report the maximum microversion; a listing at 2.69
// or above shows a down cell's servers as stubs, one below leaves them out
// (and still answers 200) or, with FailListingOnDownCell, answers 500; a
// microversion outside the range is 406, a malformed one 400.
func TestNovaMicroversionsAndDownCells(t *testing.T) {
	listed := func(body map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, s := range body["servers"].([]any) {
			srv := s.(map[string]any)
			out[srv["id"].(string)] = srv
		}
		return out
	}
	t.Run("version documents", func(t *testing.T) {
		for _, max := range []string{"", "2.60"} {
			f := newFixture(t, openstacksim.Config{ComputeMaxVersion: max})
			want := max
			if want == "" {
				want = openstacksim.DefaultComputeMaxVersion
			}
			status, _, body := f.do(http.MethodGet, "/compute/v2.1/", nil, nil) // no token needed, as in Nova
			v, _ := body["version"].(map[string]any)
			if status != 200 || v["id"] != "v2.1" || v["version"] != want || v["min_version"] != "2.1" {
				t.Errorf("GET /compute/v2.1/ = %d %v, want version %s", status, body, want)
			}
			status, _, body = f.do(http.MethodGet, "/compute/", nil, nil)
			versions, _ := body["versions"].([]any)
			if status != 200 || len(versions) != 1 || versions[0].(map[string]any)["version"] != want {
				t.Errorf("GET /compute/ = %d %v, want version %s", status, body, want)
			}
		}
	})
	at269 := map[string]string{"X-OpenStack-Nova-API-Version": "2.69"}
	for _, tc := range []struct {
		name   string
		cfg    openstacksim.Config
		header map[string]string
		query  string // of the listing, after "?"
		// asked: the microversion the call log records; status of the listing;
		// stub: the down cell's server is listed as a stub (otherwise, with 200,
		// left out); served: the version the answer names.
		asked  string
		status int
		stub   bool
		served string
	}{
		{"no microversion", openstacksim.Config{}, nil, "", "", 200, false, "2.1"},
		{"2.68", openstacksim.Config{}, map[string]string{"X-OpenStack-Nova-API-Version": "2.68"}, "", "2.68", 200, false, "2.68"},
		{"2.69, legacy header", openstacksim.Config{}, at269, "", "2.69", 200, true, "2.69"},
		{"2.69, OpenStack-API-Version", openstacksim.Config{}, map[string]string{"OpenStack-API-Version": "volume 3.0, compute 2.69"}, "", "2.69", 200, true, "2.69"},
		{"OpenStack-API-Version wins", openstacksim.Config{}, map[string]string{"OpenStack-API-Version": "compute 2.1", "X-OpenStack-Nova-API-Version": "2.69"}, "", "2.1", 200, false, "2.1"},
		{"latest", openstacksim.Config{}, map[string]string{"X-OpenStack-Nova-API-Version": "latest"}, "", "latest", 200, true, openstacksim.DefaultComputeMaxVersion},
		{"above the maximum", openstacksim.Config{ComputeMaxVersion: "2.60"}, map[string]string{"X-OpenStack-Nova-API-Version": "2.69"}, "", "2.69", 406, false, ""},
		{"malformed", openstacksim.Config{}, map[string]string{"X-OpenStack-Nova-API-Version": "two"}, "", "two", 400, false, ""},
		{"failing on a down cell", openstacksim.Config{FailListingOnDownCell: true}, nil, "", "", 500, false, ""},
		{"failing on a down cell, at 2.69", openstacksim.Config{FailListingOnDownCell: true}, at269, "", "2.69", 200, true, "2.69"},
		// Nova's _is_cell_down_supported: paging, sorting or a filter turn the
		// stubs off at 2.69 too (a stub has nothing to page, sort or filter by);
		// all_tenants is the one filter allowed.
		{"2.69 with a limit", openstacksim.Config{}, at269, "limit=10", "2.69", 200, false, "2.69"},
		{"2.69 with sort_key", openstacksim.Config{}, at269, "sort_key=created_at", "2.69", 200, false, "2.69"},
		{"2.69 with sort_dir", openstacksim.Config{}, at269, "sort_dir=desc", "2.69", 200, false, "2.69"},
		{"2.69 with a filter", openstacksim.Config{}, at269, "name=node", "2.69", 200, false, "2.69"},
		{"2.69 with all_tenants", openstacksim.Config{}, at269, "all_tenants=1", "2.69", 200, true, "2.69"},
		{"failing on a down cell, at 2.69 with a limit", openstacksim.Config{FailListingOnDownCell: true}, at269, "limit=10", "2.69", 500, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			f.login()
			up := f.sim.AddServerAt("node-1", "10.0.0.1")
			down := f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"net": {{Addr: "10.0.0.2"}}}})
			f.sim.SetCellDown("cell2", true)
			path := "/compute/v2.1/servers/detail"
			if tc.query != "" {
				path += "?" + tc.query
			}
			status, hdr, body := f.do(http.MethodGet, path, nil, tc.header)
			if status != tc.status {
				t.Fatalf("listing = %d %v, want %d", status, body, tc.status)
			}
			if calls := f.sim.Calls(openstacksim.OpListServers); len(calls) != 1 || calls[0].Microversion != tc.asked {
				t.Errorf("call log = %+v, want the microversion %q", calls, tc.asked)
			}
			if status != 200 {
				if body["computeFault"] == nil && body["badRequest"] == nil {
					t.Errorf("error body = %v, want Nova's", body)
				}
				return
			}
			if hdr.Get("X-OpenStack-Nova-API-Version") != tc.served || hdr.Get("OpenStack-API-Version") != "compute "+tc.served {
				t.Errorf("answer's version headers = %q, %q; want %s", hdr.Get("X-OpenStack-Nova-API-Version"), hdr.Get("OpenStack-API-Version"), tc.served)
			}
			servers := listed(body)
			if servers[up.ID]["addresses"] == nil {
				t.Errorf("the server of the cell that is up: %v", servers[up.ID])
			}
			stub, ok := servers[down.ID]
			switch {
			case tc.stub && !ok, !tc.stub && ok:
				t.Fatalf("listed %v; want the down cell's server listed as a stub: %v", body, tc.stub)
			case tc.stub:
				keys := slices.Sorted(maps.Keys(stub))
				if want := []string{"created", "id", "links", "status", "tenant_id"}; !reflect.DeepEqual(keys, want) || stub["status"] != "UNKNOWN" ||
					stub["tenant_id"] != f.sim.Config().ProjectID || len(stub["links"].([]any)) != 2 {
					t.Errorf("stub = %v, want the keys %q, status UNKNOWN, the project and self and bookmark links", stub, want)
				}
			}
			// Back up: listed in full again.
			f.sim.SetCellDown("cell2", false)
			_, _, body = f.do(http.MethodGet, path, nil, tc.header)
			if srv := listed(body)[down.ID]; srv == nil || srv["status"] != "ACTIVE" || srv["addresses"] == nil {
				t.Errorf("after the cell is back: %v", srv)
			}
		})
	}
}

// A down cell on a listing of several pages, at 2.69: its stubs are on the
// first page only (the one request without parameters); every page after it
// follows a link with a marker, on which Nova leaves the down cell out and
// still answers 200, or answers 500 with FailListingOnDownCell.
func TestNovaDownCellOnPages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     bool
		downLast bool     // the down cell's server is the oldest (on the second page)
		want     []string // per page, names or "UNKNOWN"; "500" for a failed page
	}{
		{"a stub on the first page", false, false, []string{"UNKNOWN node-3", "node-2 node-1"}},
		{"on the second page, skipped", false, true, []string{"node-3 node-2", "node-1"}},
		{"on the second page, failing", true, true, []string{"node-3 node-2", "500"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{MaxLimit: 2, FailListingOnDownCell: tc.fail})
			f.login()
			down := openstacksim.NovaServer{Name: "node-0", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"net": {{Addr: "10.0.0.9"}}}}
			if tc.downLast {
				f.sim.AddServer(down)
			}
			for i := 1; i <= 3; i++ {
				f.sim.AddServerAt(fmt.Sprintf("node-%d", i), fmt.Sprintf("10.0.0.%d", i))
			}
			if !tc.downLast {
				f.sim.AddServer(down)
			}
			f.sim.SetCellDown("cell2", true)
			var pages []string
			for path := "/compute/v2.1/servers/detail"; path != "" && len(pages) < 5; {
				status, _, body := f.do(http.MethodGet, path, nil, map[string]string{"X-OpenStack-Nova-API-Version": "2.69"})
				if status != 200 {
					pages = append(pages, fmt.Sprint(status))
					break
				}
				var names []string
				for _, s := range body["servers"].([]any) {
					srv := s.(map[string]any)
					if srv["status"] == "UNKNOWN" {
						names = append(names, "UNKNOWN")
						continue
					}
					names = append(names, srv["name"].(string))
				}
				if len(names) > 0 {
					pages = append(pages, strings.Join(names, " "))
				}
				path = ""
				if links, ok := body["servers_links"].([]any); ok {
					path = strings.TrimPrefix(links[0].(map[string]any)["href"].(string), f.base)
				}
			}
			if !reflect.DeepEqual(pages, tc.want) {
				t.Errorf("pages = %q, want %q", pages, tc.want)
			}
		})
	}
}
