package it

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

// The route-gc tests: each starts its own OpenStack simulator holding one
// router, writes the application-credential Secret in its namespace and runs a
// Bundle with one route-gc resource polling every second.

const (
	rgcResource = "route-gc"
	rgcSecret   = "openstack"
	rgcRouterID = "5a1d6c0e-4f3b-4c1e-9a57-0f2b1d7c9e11"
	rgcCIDR     = "198.19.0.0/16"
)

// routeGC is one test's simulator, namespace and Bundle.
type routeGC struct {
	t    testing.TB
	ns   string
	sim  *openstacksim.Server
	base string
	// router is the router the resource names (its routes' items name it).
	router string
	bundle *limbov1alpha1.Bundle
	// tombstones are the Tombstones the namespace has held.
	tombstones *tombstoneLog
}

// newRouteGC starts a simulator (stopped when t ends) with the router holding
// routes, and writes the credentials Secret in a fresh namespace.
func newRouteGC(t testing.TB, cfg openstacksim.Config, routes ...openstacksim.Route) *routeGC {
	t.Helper()
	sim := openstacksim.New(cfg)
	base, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop OpenStack simulator: %v", err)
		}
	})
	sim.AddRouter(rgcRouterID, "cluster-router", routes...)
	f := routeGCOn(t, sim, base)
	c := sim.Config()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: rgcSecret, Namespace: f.ns},
		StringData: map[string]string{
			routegc.KeyApplicationCredentialID:     c.ApplicationCredentialID,
			routegc.KeyApplicationCredentialSecret: c.ApplicationCredentialSecret,
		},
	}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatalf("create Secret: %v", err)
	}
	return f
}

// routeGCOn is the world of a test against the running simulator sim (at base):
// a fresh namespace, whose Tombstones it logs.
func routeGCOn(t testing.TB, sim *openstacksim.Server, base string) *routeGC {
	ns := env.Namespace(t)
	return &routeGC{t: t, ns: ns, sim: sim, base: base, router: rgcRouterID, tombstones: watchTombstones(t, ns)}
}

// newRouteGCWithOrphan is newRouteGC with two routes: live, to node-1
// (10.180.0.3), and orphan, to 10.180.0.4, which no server has.
func newRouteGCWithOrphan(t testing.TB, cfg openstacksim.Config) (f *routeGC, live, orphan openstacksim.Route) {
	t.Helper()
	live, orphan = rt("198.19.1.0/24", "10.180.0.3"), rt("198.19.2.0/24", "10.180.0.4")
	f = newRouteGC(t, cfg, live, orphan)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	return f, live, orphan
}

// resource is a route-gc resource against the simulator, polling every second;
// extra are further spec fields as JSON.
func (f *routeGC) resource(deletionDelay string, extra ...string) limbov1alpha1.Resource {
	fields := append([]string{
		fmt.Sprintf(`"openstack":{"authURL":%q,"region":"RegionOne","credentialsSecretRef":{"name":%q}}`, openstacksim.AuthURL(f.base), rgcSecret),
		fmt.Sprintf(`"routerID":%q,"clusterCIDR":%q,"interval":"1s"`, rgcRouterID, rgcCIDR),
	}, extra...)
	return limbov1alpha1.Resource{Name: rgcResource, Plugin: &limbov1alpha1.PluginResource{
		Name: routegc.Name, DeletionDelay: deletionDelay,
		Spec: &apiextensionsv1.JSON{Raw: []byte("{" + strings.Join(fields, ",") + "}")},
	}}
}

// start creates the Bundle with one route-gc resource.
func (f *routeGC) start(deletionDelay string) *limbov1alpha1.Bundle {
	f.t.Helper()
	f.bundle = createBundle(f.t, f.ns, "cluster", f.resource(deletionDelay))
	return f.bundle
}

// routes is the router's current route list.
func (f *routeGC) routes() []openstacksim.Route {
	r, _ := f.sim.Router(rgcRouterID)
	return r.Routes
}

// hasRoute reports whether the router holds r.
func (f *routeGC) hasRoute(r openstacksim.Route) bool { return slices.Contains(f.routes(), r) }

// writes are the calls that changed or tried to change the router.
func (f *routeGC) writes() []openstacksim.Call {
	return f.sim.Calls(openstacksim.OpUpdateRouter, openstacksim.OpRemoveExtraRoutes, openstacksim.OpAddExtraRoutes)
}

// waitReady waits until the Bundle is Ready and the resource reports message.
func (f *routeGC) waitReady(message string) *limbov1alpha1.Bundle {
	f.t.Helper()
	return waitBundle(f.t, f.bundle, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, rgcResource, limbov1alpha1.ResourceReady, "", message); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
}

// waitError waits until the resource is in Error with a message holding parts.
func (f *routeGC) waitError(parts ...string) *limbov1alpha1.Bundle {
	f.t.Helper()
	return waitBundle(f.t, f.bundle, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, rgcResource, limbov1alpha1.ResourceError, "PluginFailed"); err != nil {
			return err
		}
		msg := resourceStatus(cur, rgcResource).Message
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return fmt.Errorf("resource message %q lacks %q", msg, p)
			}
		}
		return nil
	})
}

// tombstoneOf returns the Tombstone of route r, or nil.
func (f *routeGC) tombstoneOf(r openstacksim.Route) *limbov1alpha1.Tombstone {
	for _, ts := range tombstones(f.t, f.ns) {
		if ts.Spec.Item.ID == routeID(r) {
			return &ts
		}
	}
	return nil
}

// tombstonesMade are the item IDs of every Tombstone the namespace has held
// since the test began, in the order they were seen: also those already gone.
func (f *routeGC) tombstonesMade() []string {
	f.tombstones.mu.Lock()
	defer f.tombstones.mu.Unlock()
	var ids []string
	for _, ts := range f.tombstones.seen {
		ids = append(ids, ts.Spec.Item.ID)
	}
	return ids
}

// waitTombstone waits until a Tombstone for route r has been made (it may be
// gone already, with a short delay) and checks that it stands for the route, with
// the resource's delay.
func (f *routeGC) waitTombstone(r openstacksim.Route, delay string) *limbov1alpha1.Tombstone {
	f.t.Helper()
	ts := f.tombstones.wait(f.t, "route "+routeID(r), func(item limbov1alpha1.ExternalItem) bool { return item.ID == routeID(r) },
		func() string { return fmt.Sprintf("tombstones: %v", tombstoneItems(f.t, f.ns)) })
	want := limbov1alpha1.ExternalItem{Kind: routegc.ItemKind, ID: routeID(r), Name: routeID(r) + " on router " + f.router}
	if ts.Spec.Plugin != routegc.Name || ts.Spec.Resource != rgcResource || ts.Spec.Item != want ||
		ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] != delay {
		f.t.Errorf("Tombstone = spec %+v, annotations %v; want plugin %s, resource %s, item %+v, delay %s",
			ts.Spec, ts.Annotations, routegc.Name, rgcResource, want, delay)
	}
	return &ts
}

// waitRouteRemoved waits until the route and its Tombstone are gone.
func (f *routeGC) waitRouteRemoved(r openstacksim.Route) {
	f.t.Helper()
	testenv.Eventually(f.t, testenv.DefaultTimeout, func() error {
		if f.hasRoute(r) {
			return fmt.Errorf("route %s still on the router; tombstones: %v", routeID(r), tombstoneItems(f.t, f.ns))
		}
		if ts := f.tombstoneOf(r); ts != nil {
			return fmt.Errorf("the Tombstone of %s is still there: %+v", routeID(r), ts.Status)
		}
		return nil
	})
}

// routesUntouched fails when the router's routes differ from want or a write
// was sent.
func (f *routeGC) routesUntouched(want ...openstacksim.Route) func() error {
	return func() error {
		if got := f.routes(); !slices.Equal(got, want) {
			return fmt.Errorf("routes = %v, want %v", got, want)
		}
		if w := f.writes(); len(w) != 0 {
			return fmt.Errorf("router writes: %+v", w)
		}
		return nil
	}
}

func routeID(r openstacksim.Route) string { return r.Destination + "->" + r.NextHop }

func rt(dst, hop string) openstacksim.Route {
	return openstacksim.Route{Destination: dst, NextHop: hop}
}

// counterValue reads a counter from the in-process controller's registry (the
// one its /metrics serves); labels select one series of a vector.
func counterValue(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if hasLabels(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("metric %s%v is not registered", name, labels)
	return 0
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}
