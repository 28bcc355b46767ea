package it

import (
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// examples/route-gc (secret.yaml, bundle.yaml) works against the simulator
// with the demo state of `limbo dev --simulators`, as under `make run`: the
// route to the deleted node is in limbo, the others are desired. Only the
// authURL changes, from the simulator's fixed port to this test's.
func TestRouteGCExample(t *testing.T) {
	t.Parallel()
	e := readPluginExample(t, "route-gc")
	sim := openstacksim.New(openstacksim.Config{})
	sim.LoadDemo()
	base, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })

	keystone := e.Spec["openstack"].(map[string]any)
	if want := openstacksim.AuthURL("http://127.0.0.1:5000"); keystone["authURL"] != want {
		t.Errorf("bundle.yaml authURL = %v, want the simulator of limbo dev --simulators, %s", keystone["authURL"], want)
	}
	if e.Spec["routerID"] != openstacksim.DemoRouterID || e.Spec["clusterCIDR"] != openstacksim.DemoClusterCIDR {
		t.Errorf("bundle.yaml routerID, clusterCIDR = %v, %v; want the demo's", e.Spec["routerID"], e.Spec["clusterCIDR"])
	}
	keystone["authURL"] = openstacksim.AuthURL(base)
	f := routeGCOn(t, sim, base)
	f.router = openstacksim.DemoRouterID
	f.bundle = e.create(t, f.ns)
	f.waitReady("3 routes in 198.19.0.0/16, 1 orphaned; 2 servers")
	f.waitTombstone(openstacksim.DemoRoutes[2], e.Resource().Plugin.DeletionDelay)
}
