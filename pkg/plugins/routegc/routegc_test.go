package routegc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugin/plugintest"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

func TestResponsible(t *testing.T) {
	v4 := netip.MustParsePrefix("198.19.0.0/16")
	v6 := netip.MustParsePrefix("fd00:10::/48")
	host := netip.MustParsePrefix("198.19.0.2/32") // a cluster CIDR of one address
	for _, tc := range []struct {
		cluster     netip.Prefix
		destination string
		want        bool
		wantErr     bool
	}{
		{v4, "198.19.1.0/24", true, false},
		{v4, "198.19.0.0/16", true, false},     // the whole CIDR: first and last inside
		{v4, "198.19.255.255/32", true, false}, // last address
		{v4, "198.19.0.0/32", true, false},     // first address
		{v4, "198.19.1.7/24", true, false},     // host bits set: the network it names
		{v4, "198.18.0.0/15", false, false},    // first address outside
		{v4, "198.19.0.0/15", false, false},    // masks to 198.18.0.0/15: first outside
		{v4, "198.0.0.0/8", false, false},      // first outside, contains the CIDR
		{v4, "198.20.0.0/24", false, false},    // after it
		{v4, "198.18.255.0/24", false, false},  // before it
		{v4, "0.0.0.0/0", false, false},        // default route
		{v4, "fd00:10::/64", false, false},     // another family
		{v4, "198.19.1.0", false, true},        // no prefix length
		{v4, "198.19.1.0/33", false, true},
		{v4, "not-a-cidr", false, true},
		{v4, "", false, true},
		{v6, "fd00:10:0:1::/64", true, false},
		{v6, "fd00:10:0:ffff:ffff:ffff:ffff:ffff/128", true, false}, // last address
		{v6, "fd00:10:1::/128", false, false},
		{v6, "fd00:10::/48", true, false},
		{v6, "fd00:10::/47", false, false}, // last address outside
		{v6, "fd00:11::/64", false, false},
		{v6, "::/0", false, false},
		{v6, "198.19.1.0/24", false, false}, // another family
		{v6, "fd00:10::/129", false, true},
		{host, "198.19.0.2/32", true, false},
		{host, "198.19.0.2/31", false, false}, // last address, 198.19.0.3, outside
	} {
		got, err := routegc.Responsible(tc.cluster, tc.destination)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("Responsible(%s, %q) = %v, %v; want %v, error %v", tc.cluster, tc.destination, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestItemID(t *testing.T) {
	r := openstack.Route{DestinationCIDR: "198.19.1.0/24", NextHop: "10.180.0.3"}
	if id := routegc.ItemID(r); id != "198.19.1.0/24->10.180.0.3" {
		t.Errorf("ItemID = %q", id)
	}
	if got, err := routegc.ParseItemID(routegc.ItemID(r)); err != nil || got != r {
		t.Errorf("ParseItemID round trip = %+v, %v", got, err)
	}
	v6 := openstack.Route{DestinationCIDR: "fd00:10:0:1::/64", NextHop: "fd00::3"}
	if got, err := routegc.ParseItemID(routegc.ItemID(v6)); err != nil || got != v6 {
		t.Errorf("ParseItemID IPv6 = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "198.19.1.0/24", "198.19.1.0/24->", "x->10.0.0.1", "198.19.1.0/24->10.0.0"} {
		if _, err := routegc.ParseItemID(bad); err == nil {
			t.Errorf("ParseItemID(%q) accepted", bad)
		}
	}
}

const (
	secretName = "openstack"
	routerID   = "5a1d6c0e-4f3b-4c1e-9a57-0f2b1d7c9e11"
	cidr       = "198.19.0.0/16"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// pagedNote is what the message says of a server listing of several pages.
const pagedNote = "a down Nova cell shows on the first page only: Nova needs list_records_by_skipping_down_cells = false"

func route(dst, hop string) openstacksim.Route {
	return openstacksim.Route{Destination: dst, NextHop: hop}
}

// fixture is the plugin against an OpenStack simulator (over HTTP) and a fake
// Kubernetes API holding the credentials Secret.
type fixture struct {
	t       *testing.T
	sim     *openstacksim.Server
	base    string
	k8s     client.Client
	plugin  *routegc.Plugin
	metrics *routegc.Metrics
	bundle  *limbov1alpha1.Bundle
}

func newFixture(t *testing.T, cfg openstacksim.Config, secret map[string]string) *fixture {
	t.Helper()
	sim := openstacksim.New(cfg)
	base, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	if secret == nil {
		c := sim.Config()
		secret = map[string]string{routegc.KeyApplicationCredentialID: c.ApplicationCredentialID, routegc.KeyApplicationCredentialSecret: c.ApplicationCredentialSecret}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: "team"}, Data: map[string][]byte{}}
	for k, v := range secret {
		s.Data[k] = []byte(v)
	}
	m := routegc.NewMetrics(prometheus.NewRegistry())
	return &fixture{
		t: t, sim: sim, base: base, metrics: m,
		k8s:    fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(s).Build(),
		plugin: routegc.New(routegc.Options{Metrics: m}),
		bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: "team", UID: types.UID("uid-" + t.Name())}},
	}
}

func (f *fixture) spec(extra string) []byte {
	s := fmt.Sprintf(`{"openstack":{"authURL":%q,"region":"RegionOne","credentialsSecretRef":{"name":%q}},"routerID":%q,"clusterCIDR":%q`,
		openstacksim.AuthURL(f.base), secretName, routerID, cidr)
	if extra != "" {
		s += "," + extra
	}
	return []byte(s + "}")
}

func (f *fixture) request(now time.Time) plugin.Request {
	return plugin.Request{Bundle: f.bundle, Resource: "routes", Spec: f.spec(""), Client: f.k8s, Reader: f.k8s, Now: now}
}

func (f *fixture) plan(now time.Time) (*plugin.Result, error) {
	return f.plugin.Plan(context.Background(), f.request(now))
}

func (f *fixture) mustPlan(now time.Time) *plugin.Result {
	f.t.Helper()
	res, err := f.plan(now)
	if err != nil {
		f.t.Fatalf("Plan: %v", err)
	}
	return res
}

// remove removes route id, found on the fixture's router.
func (f *fixture) remove(id string) error {
	return f.removeFound(id, id+" on router "+routerID)
}

// removeFound removes the route of the item id named name.
func (f *fixture) removeFound(id, name string) error {
	return f.plugin.DeleteExternal(context.Background(), f.request(t0), limbov1alpha1.ExternalItem{Kind: routegc.ItemKind, ID: id, Name: name})
}

func (f *fixture) routes() []openstacksim.Route {
	r, _ := f.sim.Router(routerID)
	return r.Routes
}

// items renders an inventory as "id=desired" strings.
func items(res *plugin.Result) []string {
	var out []string
	for _, e := range res.Inventory.External {
		if e.Kind != routegc.ItemKind || e.Name != e.ID+" on router "+routerID {
			out = append(out, "bad item "+fmt.Sprint(e.ExternalItem))
		}
		out = append(out, fmt.Sprintf("%s=%v", e.ID, e.Desired))
	}
	return out
}

// The inventory holds the routes inside the CIDR, desired while their next hop
// is a fixed or floating address of a server on any page; routes outside the
// CIDR and unparsable ones are not in it.
func TestPlanInventory(t *testing.T) {
	f := newFixture(t, openstacksim.Config{MaxLimit: 2}, nil)
	f.sim.AddRouter(routerID, "cluster",
		route("198.19.1.0/24", "10.180.0.3"),    // node-1, fixed
		route("198.19.2.0/24", "10.180.0.4"),    // nobody: orphan
		route("198.19.3.0/24", "172.24.4.10"),   // node-2's floating address
		route("10.0.0.0/8", "10.180.0.99"),      // outside the CIDR
		route("198.19.0.0/15", "10.180.0.98"),   // only partly inside
		route("198.19.4.0/24", "fd00::5"),       // node-3 over IPv6
		route("198.19.5.0/24", "10.180.0.0005"), // unparsable next hop (the API would refuse it, a broken DB need not)
		route("198.19.6.0/24/x", "10.180.0.3"),  // unparsable destination
		route("198.19.7.0/24", "10.180.0.6"),    // node-4, SHUTOFF
		route("198.19.8.0/24", "10.180.0.7"),    // node-5, ERROR
	)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Addresses: map[string][]openstacksim.Address{
		"cluster-net": {{Addr: "10.180.0.5"}, {Addr: "172.24.4.10", Type: "floating"}}}})
	f.sim.AddServerAt("node-3", "fd00:0:0:0::5")
	// A stopped or failed server is still the cluster's node: its route stays
	// (removed, the node would come back without a pod network).
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-4", Status: "SHUTOFF", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.6"}}}})
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-5", Status: "ERROR", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.7"}}}})
	// Being built: no addresses yet. Its build failed, or booted without a
	// network: no addresses, and no Neutron port either.
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-6", Status: "BUILD"})
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-7", Status: "ERROR"})
	f.sim.AddServer(openstacksim.NovaServer{Name: "no-network"})
	f.sim.AddServerAt("bastion", "10.180.0.200") // five pages of Nova's max_limit of 2

	res := f.mustPlan(t0)
	want := []string{"198.19.1.0/24->10.180.0.3=true", "198.19.2.0/24->10.180.0.4=false", "198.19.3.0/24->172.24.4.10=true", "198.19.4.0/24->fd00::5=true",
		"198.19.7.0/24->10.180.0.6=true", "198.19.8.0/24->10.180.0.7=true"}
	if got := items(res); !reflect.DeepEqual(got, want) {
		t.Errorf("inventory = %q, want %q", got, want)
	}
	if want := "6 routes in 198.19.0.0/16, 1 orphaned; 9 servers in 5 pages (" + pagedNote + "); 2 unparsable routes, never touched"; res.Message != want || !res.Ready {
		t.Errorf("message = %q (ready %v), want %q", res.Message, res.Ready, want)
	}
	if n := f.sim.Count(openstacksim.OpListServers); n != 5 {
		t.Errorf("%d server pages read, want 5 (max_limit 2, 9 servers)", n)
	}
	if n := f.sim.Count(openstacksim.OpListPorts); n != 2 {
		t.Errorf("%d port listings, want 2 (of the ERROR and the network-less servers listed without addresses; not of the one being built)", n)
	}
	if got := testutil.ToFloat64(f.metrics.Orphaned); got != 1 {
		t.Errorf("orphaned counter = %v, want 1", got)
	}
}

// Between polls the plan reuses its inventory; after the interval (plus at most
// 50 % jitter) it polls again.
func TestPlanPollsOncePerInterval(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"))
	f.sim.AddServerAt("node-1", "10.180.0.3")

	res := f.mustPlan(t0)
	if res.PollAfter < routegc.DefaultInterval || res.PollAfter > routegc.DefaultInterval*3/2 {
		t.Errorf("PollAfter = %v, want 5m to 7m30s", res.PollAfter)
	}
	next := t0.Add(res.PollAfter)
	f.sim.AddServerAt("node-2", "10.180.0.4")
	again := f.mustPlan(t0.Add(time.Minute))
	if n := f.sim.Count(openstacksim.OpGetRouter); n != 1 {
		t.Errorf("%d router reads before the interval, want 1", n)
	}
	if again.PollAfter != next.Sub(t0.Add(time.Minute)) || !reflect.DeepEqual(items(again), items(res)) {
		t.Errorf("cached plan = %v %q, want the first poll's inventory and deadline", again.PollAfter, items(again))
	}
	later := f.mustPlan(next)
	if got := items(later); !reflect.DeepEqual(got, []string{"198.19.1.0/24->10.180.0.3=true", "198.19.2.0/24->10.180.0.4=true"}) {
		t.Errorf("after the interval the inventory = %q: the new server was not seen", got)
	}
	// A changed spec polls at once.
	req := f.request(next.Add(time.Second))
	req.Spec = f.spec(`"interval":"10s"`)
	res, err := f.plugin.Plan(context.Background(), req)
	if err != nil || f.sim.Count(openstacksim.OpGetRouter) != 3 {
		t.Errorf("a changed spec did not poll: %v, %d reads", err, f.sim.Count(openstacksim.OpGetRouter))
	}
	if res.PollAfter < 10*time.Second || res.PollAfter > 15*time.Second {
		t.Errorf("PollAfter = %v, want 10s to 15s", res.PollAfter)
	}
}

// The plan's poll is the interval plus 0 to 50 % at either end of its range:
// never below the interval, never negative.
func TestPlanPollAtTheIntervalBounds(t *testing.T) {
	for _, tc := range []struct {
		interval string
		least    time.Duration
	}{
		{"1s", routegc.MinInterval},
		{"8760h", routegc.MaxInterval},
	} {
		t.Run(tc.interval, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{}, nil)
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
			f.sim.AddServerAt("node-1", "10.180.0.3")
			step := tc.least / 4 // three plans within the interval
			for i := range 3 {
				req := f.request(t0.Add(time.Duration(i) * step))
				req.Spec = f.spec(`"interval":"` + tc.interval + `"`)
				res, err := f.plugin.Plan(context.Background(), req)
				if err != nil || res.PollAfter < tc.least-time.Duration(i)*step || res.PollAfter > tc.least*3/2 {
					t.Fatalf("plan %d: PollAfter %v, %v; want %v to %v", i, res.PollAfter, err, tc.least, tc.least*3/2)
				}
			}
			if n := f.sim.Count(openstacksim.OpGetRouter); n != 1 {
				t.Errorf("%d router reads in 3 plans within the interval, want 1", n)
			}
		})
	}
}

// An empty server list is unknown, never "everything is orphaned"; so is a
// failed listing, a failed page, a listing with a down cell's servers, and a
// failed router read.
func TestPlanRefusesUnknownDesiredSide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     openstacksim.Config
		setup   func(f *fixture)
		want    string
		counter string
	}{
		{"empty server list", openstacksim.Config{}, func(*fixture) {}, "no Nova server listed", routegc.OpListServers},
		{"server listing fails", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.Inject(openstacksim.OpListServers, openstacksim.Fault{Status: 500, Times: 1})
		}, "list Nova servers", routegc.OpListServers},
		{"second page fails", openstacksim.Config{MaxLimit: 2}, func(f *fixture) {
			for i := range 3 {
				f.sim.AddServerAt(fmt.Sprintf("node-%d", i), fmt.Sprintf("10.180.1.%d", i))
			}
			f.sim.Inject(openstacksim.OpListServers, openstacksim.Fault{Status: 503, Times: 1, Skip: 1})
		}, "list Nova servers", routegc.OpListServers},
		// The next hop of the second route is a server in the down cell: listed
		// only as a stub, it would look like an orphan.
		{"a down cell's servers listed as stubs", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})
			f.sim.SetCellDown("cell2", true)
		}, "1 of 2 Nova servers listed with status UNKNOWN (in a down cell, without addresses): the server list is incomplete and treated as unknown, and no route is orphaned", routegc.OpListServers},
		// node-2's network info cache emptied: Nova lists it ACTIVE with
		// "addresses": {} though its Neutron port has 10.180.0.4, and the second
		// route would look orphaned.
		{"an active server listed without addresses, its ports with", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", InfoCacheEmpty: true, Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})
		}, "1 of 2 Nova servers listed without readable addresses (node-2 (", routegc.OpListServers}, // its name and ID, for an operator to find
		{"an active server listed without addresses, its ports unreadable", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", InfoCacheEmpty: true, Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})
			f.sim.Inject(openstacksim.OpListPorts, openstacksim.Fault{Status: 500, Times: 1})
		}, "is listed without addresses, and its Neutron ports could not be read", routegc.OpListServers},
		// node-2's address on one network does not parse: the one read on the
		// other network is not all of its addresses.
		{"a server with an address that does not parse beside one that does", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Addresses: map[string][]openstacksim.Address{
				"cluster-net": {{Addr: "10.180.0.0004"}}, "storage-net": {{Addr: "10.190.0.4"}}}})
		}, "1 of 2 Nova servers listed without readable addresses (node-2 (", routegc.OpListServers},
		{"compute version document fails", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.Inject(openstacksim.OpComputeVersion, openstacksim.Fault{Status: 503, Times: 1})
		}, "list Nova servers: compute API version", routegc.OpListServers},
		// What route-gc asks of a cloud older than 2.69: Nova's
		// list_records_by_skipping_down_cells = false.
		{"a cloud below 2.69 failing listings while a cell is down", openstacksim.Config{ComputeMaxVersion: "2.60", FailListingOnDownCell: true}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})
			f.sim.SetCellDown("cell2", true)
		}, "list Nova servers", routegc.OpListServers},
		{"router read fails", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.Inject(openstacksim.OpGetRouter, openstacksim.Fault{Status: 500, Times: 1})
		}, "get router", routegc.OpGetRouter},
		// Deleted, or of another project to a member's token: Neutron cannot say.
		{"router not found", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.Inject(openstacksim.OpGetRouter, openstacksim.Fault{Status: 404, Times: 1})
		}, "get router " + routerID + ": router " + routerID + " not found or not visible to these credentials", routegc.OpGetRouter},
		{"network endpoint down", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddServerAt("node-1", "10.180.0.3")
			f.sim.SetOutage(openstacksim.ServiceNetwork, true)
		}, "neutron endpoint", routegc.OpAuthenticate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg, nil)
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"))
			tc.setup(f)
			res, err := f.plan(t0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || res != nil {
				t.Fatalf("Plan = %v, %v; want an error containing %q", res, err, tc.want)
			}
			if got := testutil.ToFloat64(f.metrics.Failures.WithLabelValues(tc.counter)); got != 1 {
				t.Errorf("failures{%s} = %v, want 1", tc.counter, got)
			}
			if got := testutil.ToFloat64(f.metrics.Orphaned); got != 0 {
				t.Errorf("orphaned counter = %v", got)
			}
			if len(f.routes()) != 2 {
				t.Errorf("routes changed: %v", f.routes())
			}
			// The failure is not cached: the next plan polls again.
			before := f.sim.Count(openstacksim.OpCreateToken) + f.sim.Count(openstacksim.OpGetRouter)
			_, _ = f.plan(t0.Add(time.Second))
			if after := f.sim.Count(openstacksim.OpCreateToken) + f.sim.Count(openstacksim.OpGetRouter); after == before {
				t.Error("the plan after a failure did not call OpenStack")
			}
		})
	}
}

// Credentials: an application credential, or user, password, project and
// domain; a missing key is a clear error; wrong credentials fail to
// authenticate.
func TestCredentials(t *testing.T) {
	cfg := openstacksim.New(openstacksim.Config{}).Config()
	password := map[string]string{routegc.KeyUsername: cfg.Username, routegc.KeyPassword: cfg.Password, routegc.KeyProjectID: cfg.ProjectID, routegc.KeyUserDomainName: cfg.UserDomainName}
	for _, tc := range []struct {
		name    string
		secret  map[string]string
		wantErr string
	}{
		{"password", password, ""},
		{"application credential", map[string]string{routegc.KeyApplicationCredentialID: cfg.ApplicationCredentialID, routegc.KeyApplicationCredentialSecret: cfg.ApplicationCredentialSecret}, ""},
		{"application credential without its secret", map[string]string{routegc.KeyApplicationCredentialID: cfg.ApplicationCredentialID},
			`credentials Secret "openstack" needs the keys applicationCredentialID and applicationCredentialSecret`},
		{"password without the project", map[string]string{routegc.KeyUsername: "admin", routegc.KeyPassword: "x", routegc.KeyUserDomainName: "Default"},
			`credentials Secret "openstack" needs the keys username, password, projectID and userDomainName, or the keys applicationCredentialID and applicationCredentialSecret`},
		{"empty Secret", map[string]string{"other": "x"},
			`credentials Secret "openstack" needs the keys username, password, projectID and userDomainName, or the keys applicationCredentialID and applicationCredentialSecret`},
		{"wrong password", map[string]string{routegc.KeyUsername: cfg.Username, routegc.KeyPassword: "wrong", routegc.KeyProjectID: cfg.ProjectID, routegc.KeyUserDomainName: cfg.UserDomainName},
			"keystone authentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{}, tc.secret)
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
			f.sim.AddServerAt("node-1", "10.180.0.3")
			_, err := f.plan(t0)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Plan: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Plan err = %v, want %q", err, tc.wantErr)
			}
		})
	}
	t.Run("missing Secret", func(t *testing.T) {
		f := newFixture(t, openstacksim.Config{}, nil)
		f.bundle.Namespace = "elsewhere"
		if _, err := f.plan(t0); err == nil || err.Error() != `credentials Secret "openstack": secrets "openstack" not found` {
			t.Errorf("err = %v", err)
		}
	})
}

// Credentials Keystone refused are not tried again at once: every failed pass
// and Tombstone attempt logged in again, a dozen times in the first ten seconds
// of a wrong password, and Keystone's lockout_failure_attempts locks the
// account. They are, once plugin.FailedClientRetry has passed, or the Secret
// has changed.
func TestRefusedCredentialsNotRetriedAtOnce(t *testing.T) {
	cfg := openstacksim.New(openstacksim.Config{}).Config()
	wrong := map[string]string{routegc.KeyUsername: cfg.Username, routegc.KeyPassword: "wrong", routegc.KeyProjectID: cfg.ProjectID, routegc.KeyUserDomainName: cfg.UserDomainName}
	f := newFixture(t, openstacksim.Config{}, wrong)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	for range 3 {
		if _, err := f.plan(t0); err == nil || !errors.Is(err, plugin.ErrCredentialsRefused) {
			t.Fatalf("Plan err = %v, want the credentials refused", err)
		}
	}
	if n := f.sim.Count(openstacksim.OpCreateToken); n != 1 {
		t.Errorf("%d authentications for three plans within %v, want 1", n, plugin.FailedClientRetry)
	}
}

// Removal uses remove_extraroutes where Neutron has extraroute-atomic, and the
// revision-guarded update otherwise; either way only the route goes.
func TestDeleteExternal(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{WithoutAtomicExtraRoutes: !atomic}, nil)
			keep, orphan, outside := route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"), route("10.0.0.0/8", "10.180.0.4")
			f.sim.AddRouter(routerID, "cluster", keep, orphan, outside)
			f.sim.AddServerAt("node-1", "10.180.0.3")
			if err := f.remove("198.19.2.0/24->10.180.0.4"); err != nil {
				t.Fatal(err)
			}
			if got := f.routes(); !reflect.DeepEqual(got, []openstacksim.Route{keep, outside}) {
				t.Errorf("routes = %v", got)
			}
			writes := f.sim.Calls(openstacksim.OpRemoveExtraRoutes, openstacksim.OpUpdateRouter)
			wantOp := openstacksim.OpUpdateRouter
			if atomic {
				wantOp = openstacksim.OpRemoveExtraRoutes
			}
			if len(writes) != 1 || writes[0].Op != wantOp || (!atomic && writes[0].IfMatch != "revision_number=1") {
				t.Errorf("writes = %+v, want one %s (If-Match revision_number=1 when not atomic)", writes, wantOp)
			}
			if got := testutil.ToFloat64(f.metrics.Removed); got != 1 {
				t.Errorf("removed counter = %v", got)
			}
			// Already gone: success, nothing written, not counted.
			if err := f.remove("198.19.2.0/24->10.180.0.4"); err != nil {
				t.Errorf("removing a route that is gone: %v", err)
			}
			if n := len(f.sim.Calls(openstacksim.OpRemoveExtraRoutes, openstacksim.OpUpdateRouter)); n != 1 || testutil.ToFloat64(f.metrics.Removed) != 1 {
				t.Errorf("a gone route was written (%d writes) or counted", n)
			}
		})
	}
}

// A 404 on the router during a removal is no proof that the route is gone:
// Neutron answers 404 as well for a router these credentials may not see (a
// member's token and another project's router, after the credentials
// changed), where the route still is. Whether the read, remove_extraroutes or
// the guarded update answers it, the removal fails with an error that says so
// and is retried (not refused: the credentials can be fixed), writing nothing
// more. A router deleted on purpose retries too, until the resource goes or
// routerID changes.
func TestDeleteExternalRouterNotFound(t *testing.T) {
	const wantErr = "router " + routerID + " not found or not visible to these credentials"
	orphan := route("198.19.2.0/24", "10.180.0.4")
	for _, tc := range []struct {
		name  string
		cfg   openstacksim.Config
		setup func(f *fixture)
		// routes: the router's routes afterwards, nil when there is no router.
		routes []openstacksim.Route
	}{
		{"router deleted", openstacksim.Config{}, func(*fixture) {}, nil},
		{"router of another project", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddRouter(routerID, "cluster", orphan)
			if err := f.sim.SetRouterProject(routerID, "c1a5e7a2b4d64f0e8a9b1c2d3e4f5a6b"); err != nil {
				t.Fatal(err)
			}
		}, []openstacksim.Route{orphan}},
		{"404 on the read", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddRouter(routerID, "cluster", orphan)
			f.sim.Inject(openstacksim.OpGetRouter, openstacksim.Fault{Status: 404, Times: 1})
		}, []openstacksim.Route{orphan}},
		{"404 on remove_extraroutes", openstacksim.Config{}, func(f *fixture) {
			f.sim.AddRouter(routerID, "cluster", orphan)
			f.sim.Inject(openstacksim.OpRemoveExtraRoutes, openstacksim.Fault{Status: 404, Times: 1})
		}, []openstacksim.Route{orphan}},
		{"404 on the guarded update", openstacksim.Config{WithoutAtomicExtraRoutes: true}, func(f *fixture) {
			f.sim.AddRouter(routerID, "cluster", orphan)
			f.sim.Inject(openstacksim.OpUpdateRouter, openstacksim.Fault{Status: 404, Times: 1})
		}, []openstacksim.Route{orphan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg, nil)
			f.sim.AddServerAt("node-1", "10.180.0.3")
			tc.setup(f)
			err := f.remove(routegc.ItemID(openstack.Route{DestinationCIDR: orphan.Destination, NextHop: orphan.NextHop}))
			if err == nil || !strings.Contains(err.Error(), wantErr) || !errors.Is(err, openstack.ErrNotFound) || errors.Is(err, plugin.ErrNotResponsible) {
				t.Fatalf("DeleteExternal = %v, want a retried error containing %q", err, wantErr)
			}
			if got := testutil.ToFloat64(f.metrics.Failures.WithLabelValues(routegc.OpRemoveRoute)); got != 1 {
				t.Errorf("failures{remove_route} = %v, want 1", got)
			}
			if got := testutil.ToFloat64(f.metrics.Removed); got != 0 {
				t.Errorf("removed counter = %v", got)
			}
			if r, ok := f.sim.Router(routerID); ok != (tc.routes != nil) || !reflect.DeepEqual(r.Routes, tc.routes) {
				t.Errorf("router %v (found %v), want the routes %v", r.Routes, ok, tc.routes)
			}
		})
	}
}

// A 412 re-reads the router: a route added concurrently survives.
func TestDeleteExternalRetriesOnRevisionMismatch(t *testing.T) {
	f := newFixture(t, openstacksim.Config{WithoutAtomicExtraRoutes: true}, nil)
	keep, orphan, added := route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"), route("198.19.9.0/24", "10.180.0.9")
	f.sim.AddRouter(routerID, "cluster", keep, orphan)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.sim.Before(openstacksim.OpUpdateRouter, func() {
		if err := f.sim.AddRoutes(routerID, added); err != nil {
			t.Error(err)
		}
	})
	if err := f.remove(routegc.ItemID(openstack.Route{DestinationCIDR: orphan.Destination, NextHop: orphan.NextHop})); err != nil {
		t.Fatal(err)
	}
	if got := f.routes(); !reflect.DeepEqual(got, []openstacksim.Route{keep, added}) {
		t.Errorf("routes = %v, want %v: the concurrent addition was lost or the orphan stayed", got, []openstacksim.Route{keep, added})
	}
	var statuses []string
	for _, c := range f.sim.Calls(openstacksim.OpUpdateRouter) {
		statuses = append(statuses, fmt.Sprintf("%s %d", c.IfMatch, c.Status))
	}
	if want := []string{"revision_number=1 412", "revision_number=2 200"}; !reflect.DeepEqual(statuses, want) {
		t.Errorf("updates = %q, want %q", statuses, want)
	}

	// A router that never stops changing is an error, after bounded attempts.
	if err := f.sim.AddRoutes(routerID, orphan); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		f.sim.Before(openstacksim.OpUpdateRouter, func() { _ = f.sim.AddRoutes(routerID, route(fmt.Sprintf("198.19.%d.0/24", 100+i), "10.180.0.9")) })
	}
	if err := f.remove("198.19.2.0/24->10.180.0.4"); !errors.Is(err, openstack.ErrRevisionMismatch) {
		t.Errorf("err = %v, want a revision mismatch", err)
	}
	if n := len(f.sim.Calls(openstacksim.OpUpdateRouter)) - 2; n != 5 {
		t.Errorf("%d guarded updates of a router that never stops changing, want 5", n)
	}
}

// The route's next hop is checked again before the removal: a server that came
// back, or no server listed at all, stops it; so do IDs outside the CIDR.
func TestDeleteExternalFences(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	orphan := route("198.19.2.0/24", "10.180.0.4")
	f.sim.AddRouter(routerID, "cluster", orphan, route("10.0.0.0/8", "10.180.0.4"))

	// Not judged (retried), not refused.
	if err := f.remove("198.19.2.0/24->10.180.0.4"); err == nil || !strings.Contains(err.Error(), "no Nova server listed") || errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("no servers: err = %v", err)
	}
	// Desired again: refused, so that its Tombstone is cancelled, a forced one too.
	f.sim.AddServerAt("node-2", "10.180.0.4")
	if err := f.remove("198.19.2.0/24->10.180.0.4"); err == nil || !strings.Contains(err.Error(), "next hop is an address of server") || !errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("server back: err = %v", err)
	}
	if err := f.remove("10.0.0.0/8->10.180.0.4"); err == nil || !strings.Contains(err.Error(), "never touched") || !errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("outside the CIDR: err = %v", err)
	}
	if err := f.remove("garbage"); err == nil {
		t.Error("an unparsable id was accepted")
	}
	// Found on another router (routerID changed since): refused, so that the
	// Tombstone is cancelled and a route of the same ID here gets its own.
	if err := f.removeFound("198.19.2.0/24->10.180.0.7", "198.19.2.0/24->10.180.0.7 on router old-router"); err == nil ||
		!strings.Contains(err.Error(), "was found on router old-router") || !errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("another router: err = %v", err)
	}
	// Named before names carried the router: judged on the current one (here:
	// its server is back).
	if err := f.removeFound("198.19.2.0/24->10.180.0.4", "198.19.2.0/24->10.180.0.4"); err == nil || !strings.Contains(err.Error(), "next hop is an address of server") {
		t.Errorf("an item named by its ID only: err = %v", err)
	}
	if n := len(f.sim.Calls(openstacksim.OpRemoveExtraRoutes, openstacksim.OpUpdateRouter)); n != 0 || len(f.routes()) != 2 {
		t.Errorf("%d writes, routes %v: a fenced removal touched the router", n, f.routes())
	}
}

// While a cell is down, a removal is not judged: a route whose server is in
// that cell (listed as a stub, without addresses) is not removed, and the
// removal is retried, not refused; once the cell is back, the server is seen.
func TestDeleteExternalRefusesWhileACellIsDown(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	live := route("198.19.2.0/24", "10.180.0.4")
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), live)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})
	f.sim.SetCellDown("cell2", true)

	err := f.remove("198.19.2.0/24->10.180.0.4")
	if err == nil || !strings.Contains(err.Error(), "not removing route 198.19.2.0/24->10.180.0.4: 1 of 2 Nova servers listed with status UNKNOWN") ||
		errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("down cell: err = %v, want a retried error naming the UNKNOWN servers", err)
	}
	if !errors.Is(err, routegc.ErrIncompleteServers) {
		t.Errorf("down cell: err = %v, want routegc.ErrIncompleteServers", err)
	}
	if got := testutil.ToFloat64(f.metrics.Failures.WithLabelValues(routegc.OpListServers)); got != 1 {
		t.Errorf("failures{list_servers} = %v, want 1", got)
	}
	if n := len(f.sim.Calls(openstacksim.OpRemoveExtraRoutes, openstacksim.OpUpdateRouter)); n != 0 || len(f.routes()) != 2 {
		t.Errorf("%d writes, routes %v: the removal touched the router", n, f.routes())
	}
	f.sim.SetCellDown("cell2", false)
	if err := f.remove("198.19.2.0/24->10.180.0.4"); !errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("cell back: err = %v, want the route refused as its server's", err)
	}
}

// The server listing asks for compute microversion 2.69 (a down cell's servers
// as stubs) where the cloud supports it, and for none where its maximum is
// lower. A supported version is read once per client; a cloud below it is
// asked again at each listing, so that an upgrade is seen without a restart.
func TestComputeMicroversion(t *testing.T) {
	for _, tc := range []struct {
		max          string // the cloud's maximum; empty: the simulator's default
		want         string
		versionReads int // of the version document, in two polls
	}{
		{"", "2.69", 1},
		{"2.69", "2.69", 1},
		{"2.68", "", 1},
		{"2.1", "", 1},
	} {
		t.Run("max="+tc.max, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{ComputeMaxVersion: tc.max, MaxLimit: 2}, nil)
			clock := t0
			f.plugin = routegc.New(routegc.Options{Metrics: f.metrics, Now: func() time.Time { return clock }})
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
			for i := range 3 { // two pages of Nova's max_limit of 2
				f.sim.AddServerAt(fmt.Sprintf("node-%d", i), fmt.Sprintf("10.180.0.%d", 3+i))
			}
			res := f.mustPlan(t0)
			f.mustPlan(t0.Add(res.PollAfter))
			calls := f.sim.Calls(openstacksim.OpListServers)
			if len(calls) != 4 {
				t.Fatalf("%d listing calls, want 2 pages in each of 2 polls", len(calls))
			}
			for _, c := range calls {
				if c.Microversion != tc.want || c.Status != 200 {
					t.Errorf("%s %s asked for microversion %q (status %d), want %q", c.Method, c.Path, c.Microversion, c.Status, tc.want)
				}
			}
			if n := f.sim.Count(openstacksim.OpComputeVersion); n != tc.versionReads {
				t.Errorf("%d reads of the compute version document, want %d", n, tc.versionReads)
			}

			// An older cloud is asked again once MicroversionRecheck has passed
			// (an upgrade is seen without a restart); a newer one never.
			clock = clock.Add(openstack.MicroversionRecheck)
			f.mustPlan(t0.Add(24 * time.Hour)) // past any poll interval
			want := tc.versionReads
			if tc.want == "" {
				want++
			}
			if n := f.sim.Count(openstacksim.OpComputeVersion); n != want {
				t.Errorf("%d reads of the compute version document after %v, want %d", n, openstack.MicroversionRecheck, want)
			}
		})
	}
}

// The listing's first request carries no parameter: Nova lists a down cell's
// servers as stubs (at 2.69) only to a request without limit, marker, sorting
// or filters, so a limit would hide the down cell on every page. Nova answers
// it with a page of its max_limit and links the next by a marker; a listing
// of several pages says so in the message at every poll, and in a Warning
// event once: a down cell is seen on the first page only.
func TestPlanListingPages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		servers   int
		pages     int
		wantEvent bool
	}{
		{"one page", 3, 1, false},
		{"two pages", 3, 2, true},
		{"three pages", 5, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{MaxLimit: 2}, nil)
			if tc.pages == 1 {
				f = newFixture(t, openstacksim.Config{}, nil) // max_limit 1000
			}
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
			for i := range tc.servers {
				f.sim.AddServerAt(fmt.Sprintf("node-%d", i), fmt.Sprintf("10.180.0.%d", 3+i))
			}
			res := f.mustPlan(t0)
			want := fmt.Sprintf("1 routes in 198.19.0.0/16, 0 orphaned; %d servers", tc.servers)
			if tc.pages > 1 {
				want += fmt.Sprintf(" in %d pages (%s)", tc.pages, pagedNote)
			}
			if res.Message != want {
				t.Errorf("message = %q, want %q", res.Message, want)
			}
			calls := f.sim.Calls(openstacksim.OpListServers)
			if len(calls) != tc.pages {
				t.Fatalf("%d listing calls, want %d", len(calls), tc.pages)
			}
			for i, c := range calls {
				_, raw, _ := strings.Cut(c.Path, "?")
				query, _ := url.ParseQuery(raw)
				switch {
				case i == 0 && c.Path != "/compute/v2.1/servers/detail":
					t.Errorf("first page: GET %s, want no parameter (a limit turns a down cell's stubs off)", c.Path)
				case i > 0 && (query.Get("marker") == "" || query.Has("limit")):
					t.Errorf("page %d: GET %s, want Nova's next link: a marker, no limit", i+1, c.Path)
				}
			}
			if got := len(res.Events); (got == 1) != tc.wantEvent || got > 1 ||
				(got == 1 && (res.Events[0].Type != corev1.EventTypeWarning || res.Events[0].Reason != routegc.EventServersPaged ||
					!strings.Contains(res.Events[0].Message, "list_records_by_skipping_down_cells is false"))) {
				t.Errorf("events = %+v, want a Warning %s: %v", res.Events, routegc.EventServersPaged, tc.wantEvent)
			}
			// Once: not from the cached result, nor from the next poll's.
			if again := f.mustPlan(t0.Add(time.Second)); len(again.Events) != 0 || again.Message != want {
				t.Errorf("cached plan: events %+v, message %q", again.Events, again.Message)
			}
			if later := f.mustPlan(t0.Add(time.Hour)); len(later.Events) != 0 || later.Message != want {
				t.Errorf("next poll: events %+v, message %q", later.Events, later.Message)
			}
		})
	}
}

// A down cell on a listing of several pages: Nova shows its stubs on the first
// page only (they make the listing incomplete, as on one page); on a later
// page it fails the listing where list_records_by_skipping_down_cells is false,
// and otherwise leaves them out unseen — the case route-gc cannot tell, which
// its message and the docs ask to configure away.
func TestPlanDownCellWithPages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      openstacksim.Config
		downLast bool   // the down cell's server is the oldest (last page); otherwise the newest (first)
		wantErr  string // empty: the plan succeeds
		want     []string
	}{
		{"a stub on the first page", openstacksim.Config{MaxLimit: 2}, false,
			"1 of 3 Nova servers listed with status UNKNOWN (in a down cell, without addresses)", nil},
		{"a later page, Nova failing on down cells", openstacksim.Config{MaxLimit: 2, FailListingOnDownCell: true}, true, "list Nova servers", nil},
		// What the message's note is about: Nova's default skips the down cell
		// on the marker page and answers 200; its server's route looks orphaned.
		{"a later page, Nova skipping down cells", openstacksim.Config{MaxLimit: 2}, true, "",
			[]string{"198.19.1.0/24->10.180.0.3=false", "198.19.2.0/24->10.180.0.4=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg, nil)
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"))
			inCell2 := openstacksim.NovaServer{Name: "node-1", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.3"}}}}
			if tc.downLast {
				f.sim.AddServer(inCell2) // listed newest first: the oldest is on the last page
			}
			f.sim.AddServerAt("node-2", "10.180.0.4")
			f.sim.AddServerAt("node-3", "10.180.0.5")
			if !tc.downLast {
				f.sim.AddServer(inCell2)
			}
			f.sim.SetCellDown("cell2", true)
			res, err := f.plan(t0)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Plan = %v, %v; want an error containing %q", res, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := items(res); !reflect.DeepEqual(got, tc.want) || !strings.Contains(res.Message, "2 servers in 2 pages ("+pagedNote+")") {
				t.Errorf("inventory = %q, message %q; want %q and the note on pages", got, res.Message, tc.want)
			}
		})
	}
}

// Credentials scoped to another project than the router's: an admin's token
// sees the router (Neutron shows any project's to an admin), but Nova, without
// all_tenants, lists the servers of the token's project only, and judged
// against them every route of the router would be an orphan. The plan refuses,
// naming both projects, and orphans nothing; a removal refuses too (retried:
// the credentials can be fixed), before writing anything.
func TestRouterOfAnotherProject(t *testing.T) {
	const clusterProject = "c1a5e7a2b4d64f0e8a9b1c2d3e4f5a6b"
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{Admin: true, WithoutAtomicExtraRoutes: !atomic}, nil)
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"))
			if err := f.sim.SetRouterProject(routerID, clusterProject); err != nil {
				t.Fatal(err)
			}
			f.sim.AddServerAt("bastion", "192.168.0.10") // the one server of the token's project
			wantErr := fmt.Sprintf("router %s belongs to project %q, but the credentials are scoped to project %q: the credentials must be scoped to the router's project",
				routerID, clusterProject, openstacksim.DefaultProjectID)

			res, err := f.plan(t0)
			if !errors.Is(err, routegc.ErrOtherProject) || !strings.Contains(err.Error(), wantErr) || res != nil {
				t.Fatalf("Plan = %v, %v; want an error containing %q", res, err, wantErr)
			}
			if got := testutil.ToFloat64(f.metrics.Failures.WithLabelValues(routegc.OpGetRouter)); got != 1 {
				t.Errorf("failures{get_router} = %v, want 1", got)
			}
			if got := testutil.ToFloat64(f.metrics.Orphaned); got != 0 {
				t.Errorf("orphaned counter = %v", got)
			}
			err = f.remove("198.19.2.0/24->10.180.0.4")
			if !errors.Is(err, routegc.ErrOtherProject) || errors.Is(err, plugin.ErrNotResponsible) || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("DeleteExternal = %v, want a retried error containing %q", err, wantErr)
			}
			if n := len(f.sim.Calls(openstacksim.OpRemoveExtraRoutes, openstacksim.OpUpdateRouter)); n != 0 || len(f.routes()) != 2 {
				t.Errorf("%d writes, routes %v: the router of another project was touched", n, f.routes())
			}

			// In the token's project, the same router and servers are judged.
			if err := f.sim.SetRouterProject(routerID, ""); err != nil {
				t.Fatal(err)
			}
			if got := items(f.mustPlan(t0.Add(time.Second))); !reflect.DeepEqual(got, []string{"198.19.1.0/24->10.180.0.3=false", "198.19.2.0/24->10.180.0.4=false"}) {
				t.Errorf("inventory = %q", got)
			}
		})
	}
}

// A spec without a region: the router is read, and the servers listed, in the
// one region that has both a network and a compute endpoint (the first of each
// could be two regions: RegionOne's router judged against RegionTwo's
// servers). Where both are in several regions, the plan asks for
// openstack.region.
func TestRegionLeftEmpty(t *testing.T) {
	for _, tc := range []struct {
		name    string
		regions map[string][]string
		wantErr string
	}{
		{"compute's first endpoint in another region", map[string][]string{openstacksim.ServiceCompute: {"RegionTwo", "RegionOne"}}, ""},
		{"both in two regions", map[string][]string{openstacksim.ServiceNetwork: {"RegionOne", "RegionTwo"}, openstacksim.ServiceCompute: {"RegionTwo", "RegionOne"}},
			`the catalog has network and compute endpoints in the regions "RegionOne", "RegionTwo": set openstack.region`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, openstacksim.Config{CatalogRegions: tc.regions}, nil)
			f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
			f.sim.AddServerAt("node-1", "10.180.0.3")
			req := f.request(t0)
			req.Spec = bytes.Replace(req.Spec, []byte(`"region":"RegionOne",`), nil, 1)
			res, err := f.plugin.Plan(context.Background(), req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Plan = %v, %v; want an error containing %q", res, err, tc.wantErr)
				}
				if got := testutil.ToFloat64(f.metrics.Failures.WithLabelValues(routegc.OpAuthenticate)); got != 1 {
					t.Errorf("failures{authenticate} = %v, want 1", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := items(res); !reflect.DeepEqual(got, []string{"198.19.1.0/24->10.180.0.3=true"}) {
				t.Errorf("inventory = %q", got)
			}
			for _, c := range f.sim.Calls(openstacksim.OpGetRouter, openstacksim.OpListServers) {
				if c.Region != "RegionOne" {
					t.Errorf("%s %s in %s, want RegionOne", c.Method, c.Path, c.Region)
				}
			}
		})
	}
}

// A next hop written as an IPv4-mapped IPv6 address is the server's IPv4
// address: its route is desired, and its removal refused.
func TestIPv4MappedNextHop(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "::ffff:10.180.0.3"), route("198.19.2.0/24", "::ffff:10.180.0.4"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	if got, want := items(f.mustPlan(t0)), []string{"198.19.1.0/24->::ffff:10.180.0.3=true", "198.19.2.0/24->::ffff:10.180.0.4=false"}; !reflect.DeepEqual(got, want) {
		t.Errorf("inventory = %q, want %q", got, want)
	}
	if err := f.remove("198.19.1.0/24->::ffff:10.180.0.3"); !errors.Is(err, plugin.ErrNotResponsible) || !strings.Contains(err.Error(), "next hop is an address of server") {
		t.Errorf("removing the route of node-1: err = %v, want it refused", err)
	}
	if len(f.routes()) != 2 {
		t.Errorf("routes = %v", f.routes())
	}
}

// A removal makes the next plan poll again, so the cached inventory never
// lists a route that is gone.
func TestDeleteExternalInvalidatesTheCache(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.mustPlan(t0)
	if err := f.remove("198.19.2.0/24->10.180.0.4"); err != nil {
		t.Fatal(err)
	}
	res := f.mustPlan(t0.Add(time.Second))
	if got := items(res); !reflect.DeepEqual(got, []string{"198.19.1.0/24->10.180.0.3=true"}) {
		t.Errorf("inventory after the removal = %q", got)
	}
}

// The orphaned counter counts a route each time it becomes an orphan: a route
// removed and added again, still without a server, is counted again.
func TestOrphanedCountsEachTimeARouteBecomesOne(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	orphan := route("198.19.2.0/24", "10.180.0.4")
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), orphan)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.mustPlan(t0)
	if err := f.remove("198.19.2.0/24->10.180.0.4"); err != nil {
		t.Fatal(err)
	}
	if err := f.sim.AddRoutes(routerID, orphan); err != nil {
		t.Fatal(err)
	}
	f.mustPlan(t0.Add(time.Second))
	if got := testutil.ToFloat64(f.metrics.Orphaned); got != 2 {
		t.Errorf("orphaned counter = %v, want 2", got)
	}
}

// A removal refused because the route's server came back makes the next plan
// poll again too: the cached inventory still lists the route as an orphan, and
// would make its cancelled Tombstone anew.
func TestDeleteExternalRefusedInvalidatesTheCache(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	if got := items(f.mustPlan(t0)); !reflect.DeepEqual(got, []string{"198.19.1.0/24->10.180.0.3=true", "198.19.2.0/24->10.180.0.4=false"}) {
		t.Fatalf("inventory = %q", got)
	}
	f.sim.AddServerAt("node-2", "10.180.0.4")
	if err := f.remove("198.19.2.0/24->10.180.0.4"); !errors.Is(err, plugin.ErrNotResponsible) {
		t.Fatalf("server back: err = %v", err)
	}
	res := f.mustPlan(t0.Add(time.Second))
	if got := items(res); !reflect.DeepEqual(got, []string{"198.19.1.0/24->10.180.0.3=true", "198.19.2.0/24->10.180.0.4=true"}) {
		t.Errorf("inventory after the refusal = %q, want both routes desired", got)
	}
}

// A token that expired is renewed once, transparently.
func TestReauthentication(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.mustPlan(t0)
	f.sim.ExpireTokens()
	f.mustPlan(t0.Add(time.Hour))
	if n := f.sim.Count(openstacksim.OpCreateToken); n != 2 {
		t.Errorf("%d tokens created, want 2", n)
	}
}

func TestDescribe(t *testing.T) {
	d := routegc.New(routegc.Options{}).Describe()
	if d.Name != "route-gc" || d.DefaultPollInterval != 5*time.Minute || len(d.Watches) != 0 {
		t.Errorf("Describe = %+v", d)
	}
}

// The spec's schema, generated from Spec, and the plugin's own check of what a
// schema cannot say, as the Bundle reconciler applies them.
func TestSchema(t *testing.T) {
	const auth = `"openstack":{"authURL":"https://keystone/v3","credentialsSecretRef":{"name":"openstack"}}`
	const base = auth + `,"routerID":"r1","clusterCIDR":"198.19.0.0/16"`
	const durationRe = `'` + plugin.DurationPattern + `'`
	const intervalRange = `must be a duration of at least 1s and at most 8760h0m0s (90s, 1h30m)`
	plugintest.ExpectSpecs(t, routegc.New(routegc.Options{}), []plugintest.SpecCase{
		{Spec: `{` + base + `}`},
		{Spec: `{"openstack":{"authURL":"https://keystone/v3","region":"RegionOne","credentialsSecretRef":{"name":"openstack"}},` +
			`"routerID":"r1","clusterCIDR":"2001:db8::/48","interval":"1h30m"}`},
		{Spec: `{` + base + `,"interval":"1s"}`},
		{Spec: `{` + base + `,"interval":"8760h"}`},
		{Spec: `{` + auth + `,"routerID":"r1","clusterCIDR":"198.19.7.1/16"}`}, // host bits are masked
		{Spec: ``, Want: `[spec.clusterCIDR: Required value, spec.openstack: Required value, spec.routerID: Required value]`},
		{Spec: `{"openstack":{},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `[spec.openstack.authURL: Required value, spec.openstack.credentialsSecretRef: Required value]`},
		{Spec: `{"openstack":{"authURL":"x","credentialsSecretRef":{}},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.openstack.credentialsSecretRef.name: Required value`},
		{Spec: `{` + auth + `,"routerID":"","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.routerID: Invalid value: "": routerID in body should be at least 1 chars long`},
		{Spec: `{` + base + `,"routerid":"r2"}`, Want: `spec: Invalid value: "routerid": .routerid in body is a forbidden property`},
		{Spec: `{"openstack":{"authURL":"x","credentialsSecretRef":{"name":"openstack"},"project":"p"},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.openstack: Invalid value: "project": openstack.project in body is a forbidden property`},
		// Stricter than the hand-written schema was: a field it ignored there is a typo.
		{Spec: `{"openstack":{"authURL":"x","credentialsSecretRef":{"name":"openstack","namespace":"kube-system"}},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.openstack.credentialsSecretRef: Invalid value: "namespace": openstack.credentialsSecretRef.namespace in body is a forbidden property`},
		{Spec: `{` + base + `,"interval":"1 hour"}`, Want: `spec.interval: Invalid value: "1 hour": interval in body should match ` + durationRe},
		{Spec: `{` + base + `,"interval":"-1m"}`, Want: `spec.interval: Invalid value: "-1m": interval in body should match ` + durationRe},
		{Spec: `{` + base + `,"interval":"3000000h"}`, Want: `spec.interval: Invalid value: "3000000h": longer than the longest duration, 2562047h47m16.854775807s`},
		// What the schema lets through and the plugin's parse refuses (CheckSpec).
		{Spec: `{` + base + `,"interval":"0s"}`, Want: `spec.interval: Invalid value: "0s": ` + intervalRange},
		{Spec: `{` + base + `,"interval":"0"}`, Want: `spec.interval: Invalid value: "0": ` + intervalRange},
		// Polls in a hot loop (a router read and a server listing each).
		{Spec: `{` + base + `,"interval":"1ns"}`, Want: `spec.interval: Invalid value: "1ns": ` + intervalRange},
		{Spec: `{` + base + `,"interval":"500ms"}`, Want: `spec.interval: Invalid value: "500ms": ` + intervalRange},
		{Spec: `{` + base + `,"interval":"999ms"}`, Want: `spec.interval: Invalid value: "999ms": ` + intervalRange},
		// Past a year; the schema's longest duration overflowed the jitter.
		{Spec: `{` + base + `,"interval":"8761h"}`, Want: `spec.interval: Invalid value: "8761h": ` + intervalRange},
		{Spec: `{` + base + `,"interval":"2562047h"}`, Want: `spec.interval: Invalid value: "2562047h": ` + intervalRange},
		// A login that cannot work is a spec error, not a failure of every poll.
		{Spec: `{"openstack":{"authURL":"keystone.example.com/v3","credentialsSecretRef":{"name":"openstack"}},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.openstack.authURL: Invalid value: "keystone.example.com/v3": not an http or https URL with a host (Keystone's v3 endpoint, for example https://keystone.example.com:5000/v3)`},
		// An address and port without a scheme, which Go's URL parser refuses with
		// its own words: the message is still the one about the scheme.
		{Spec: `{"openstack":{"authURL":"10.0.0.5:5000/v3","credentialsSecretRef":{"name":"openstack"}},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.openstack.authURL: Invalid value: "10.0.0.5:5000/v3": not an http or https URL with a host (Keystone's v3 endpoint, for example https://keystone.example.com:5000/v3)`},
		{Spec: `{"openstack":{"authURL":"https:///v3","credentialsSecretRef":{"name":"openstack"}},"routerID":"r1","clusterCIDR":"198.19.0.0/16"}`,
			Want: `spec.openstack.authURL: Invalid value: "https:///v3": not an http or https URL with a host (Keystone's v3 endpoint, for example https://keystone.example.com:5000/v3)`},
		{Spec: `{` + auth + `,"routerID":"r1","clusterCIDR":"nonsense"}`,
			Want: `spec.clusterCIDR: Invalid value: "nonsense": not a CIDR: netip.ParsePrefix("nonsense"): no '/'`},
		{Spec: `{` + auth + `,"routerID":"r1","clusterCIDR":"0.0.0.0/0"}`,
			Want: `spec.clusterCIDR: Invalid value: "0.0.0.0/0": the whole address space is no pod CIDR: every route of the router would be route-gc's`},
		{Spec: `{` + auth + `,"routerID":"r1","clusterCIDR":"10.1.0.0/0"}`,
			Want: `spec.clusterCIDR: Invalid value: "10.1.0.0/0": the whole address space is no pod CIDR: every route of the router would be route-gc's`},
		{Spec: `{` + auth + `,"routerID":"r1","clusterCIDR":"::/0"}`,
			Want: `spec.clusterCIDR: Invalid value: "::/0": the whole address space is no pod CIDR: every route of the router would be route-gc's`},
		{Spec: `{` + auth + `,"routerID":"r1","clusterCIDR":"198.19.0.0/33"}`,
			Want: `spec.clusterCIDR: Invalid value: "198.19.0.0/33": not a CIDR: netip.ParsePrefix("198.19.0.0/33"): prefix length out of range`},
	})
}

// One resource never runs two passes at once: a second plan waits for the
// first, and gives up when its own deadline comes first.
func TestOnePassAtATime(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	entered, release := make(chan struct{}), make(chan struct{})
	f.sim.Before(openstacksim.OpGetRouter, func() {
		close(entered)
		<-release
	})
	first := make(chan error, 1)
	go func() {
		_, err := f.plan(t0)
		first <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := f.plugin.Plan(ctx, f.request(t0))
	if err == nil || !strings.Contains(err.Error(), "another pass of this resource is still running") {
		t.Errorf("second plan = %v, want it refused while the first runs", err)
	}
	if n := f.sim.Count(openstacksim.OpGetRouter); n != 0 {
		t.Errorf("%d router reads finished while the first pass was held", n)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first plan: %v", err)
	}
	if n := f.sim.Count(openstacksim.OpGetRouter); n != 1 {
		t.Errorf("%d router reads, want 1", n)
	}
}

// Neutron is asked about at most openstack.MaxPortChecks servers listed without
// addresses per listing; the others count as unreadable, and the error names
// openstack.MaxNamedServers of them.
func TestPlanBoundsPortChecks(t *testing.T) {
	f := newFixture(t, openstacksim.Config{}, nil)
	f.sim.AddRouter(routerID, "cluster", route("198.19.1.0/24", "10.180.0.3"))
	f.sim.AddServerAt("node-1", "10.180.0.3")
	n := openstack.MaxPortChecks + 3
	for i := range n {
		f.sim.AddServer(openstacksim.NovaServer{Name: fmt.Sprintf("blank-%02d", i), InfoCacheEmpty: true,
			Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: fmt.Sprintf("10.180.2.%d", i)}}}})
	}
	_, err := f.plan(t0)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d of %d Nova servers listed without readable addresses", n, n+1)) {
		t.Fatalf("Plan: %v, want %d servers without readable addresses", err, n)
	}
	if named := strings.Count(err.Error(), "blank-"); named != openstack.MaxNamedServers {
		t.Errorf("the error names %d servers, want %d: %v", named, openstack.MaxNamedServers, err)
	}
	if got := f.sim.Count(openstacksim.OpListPorts); got != openstack.MaxPortChecks {
		t.Errorf("%d port listings, want %d", got, openstack.MaxPortChecks)
	}
}

// Polls of a world that does not change give the same result every time, item
// order and message included: a Bundle's re-pass over it writes nothing.
// PollAfter is the one field that may differ, by design (the jitter spreads
// the polls of many Bundles; it decides only when the next pass comes), and
// the first poll's ServersPaged event is told once.
func TestPollsOfAnUnchangedWorldAreIdentical(t *testing.T) {
	f := newFixture(t, openstacksim.Config{MaxLimit: 2}, nil)
	f.sim.AddRouter(routerID, "cluster",
		route("198.19.1.0/24", "10.180.0.3"),
		route("198.19.2.0/24", "10.180.0.4"),
		route("198.19.3.0/24", "172.24.4.10"),
		route("10.0.0.0/8", "10.180.0.99"),
		route("198.19.4.0/24", "fd00::5"),
		route("198.19.5.0/24", "10.180.0.0005"),
		route("198.19.9.0/24", "10.180.0.9"),
	)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Addresses: map[string][]openstacksim.Address{
		"cluster-net": {{Addr: "10.180.0.5"}, {Addr: "172.24.4.10", Type: "floating"}}, "storage-net": {{Addr: "10.190.0.5"}}}})
	f.sim.AddServerAt("node-3", "fd00:0:0:0::5")
	now := t0
	wait := f.mustPlan(now).PollAfter
	var second *plugin.Result
	for i := range 20 {
		now = now.Add(wait) // due: each plan polls
		res := f.mustPlan(now)
		wait, res.PollAfter = res.PollAfter, 0
		if i == 0 {
			second = res
			if !strings.Contains(second.Message, "2 orphaned") {
				t.Fatalf("message %q: the world is meant to have 2 orphans", second.Message)
			}
			continue
		}
		if !reflect.DeepEqual(res, second) {
			t.Fatalf("poll %d of the same world differs from the second:\n%+v\n%+v", i+2, second, res)
		}
	}
	if n := f.sim.Count(openstacksim.OpGetRouter); n != 21 {
		t.Errorf("%d router reads, want 21: every plan polled", n)
	}
	if got := testutil.ToFloat64(f.metrics.Orphaned); got != 2 {
		t.Errorf("orphaned counter = %v after 21 polls of the same 2 orphans, want 2: each counted when it became one", got)
	}
}

// Without extraroute-atomic, a route is removed by a whole-list update guarded
// by the router's revision, which Neutron honours only with revision-if-match:
// without either, the removal is refused (retried, says why) and nothing is
// written. The unguarded update dropped a route the cloud provider added
// between the read and the write.
func TestDeleteExternalWithoutAGuardedUpdate(t *testing.T) {
	f := newFixture(t, openstacksim.Config{WithoutAtomicExtraRoutes: true, WithoutRevisionIfMatch: true}, nil)
	keep, orphan := route("198.19.1.0/24", "10.180.0.3"), route("198.19.2.0/24", "10.180.0.4")
	f.sim.AddRouter(routerID, "cluster", keep, orphan)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	err := f.remove("198.19.2.0/24->10.180.0.4")
	if err == nil || !strings.Contains(err.Error(), "neither extraroute-atomic nor revision-if-match in Neutron") {
		t.Errorf("remove = %v, want a refusal naming both extensions", err)
	}
	if got := f.routes(); !reflect.DeepEqual(got, []openstacksim.Route{keep, orphan}) {
		t.Errorf("routes = %v, want them untouched", got)
	}
	if writes := f.sim.Calls(openstacksim.OpRemoveExtraRoutes, openstacksim.OpUpdateRouter); len(writes) != 0 {
		t.Errorf("writes %+v, want none", writes)
	}
}
