package it

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// routerID changed while a route is in limbo, and the new router holds a route
// of the same ID: the old Tombstone is not the new router's route's countdown.
// Forced (here) or at its deadline, it is cancelled — the old router is never
// touched — and the new router's route gets a Tombstone of its own, with its own
// countdown. Before, the same Tombstone removed the new router's route at once,
// and a route only on the old router was reported Deleted while it stayed.
func TestRouteGCRouterChanged(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})
	f.start("1h")
	old := f.waitTombstone(orphan, "1h")

	const newRouter = "7c0ffee0-1b2c-4d3e-8f90-a1b2c3d4e5f6"
	f.sim.AddRouter(newRouter, "cluster-router-2", live, orphan)
	moved := f.resource("1h")
	moved.Plugin.Spec.Raw = bytes.Replace(moved.Plugin.Spec.Raw, []byte(`"routerID":"`+rgcRouterID+`"`), []byte(`"routerID":"`+newRouter+`"`), 1)
	updateBundle(t, f.bundle, moved)
	f.waitReady(fmt.Sprintf("2 routes in %s, 1 orphaned; 1 servers", rgcCIDR))

	if out, err := kubectl(t, "delete", "tombstone", "-n", f.ns, old.Name, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	waitTombstoneCancelled(t, old, "was found on router "+rgcRouterID)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		ts := f.tombstoneOf(orphan)
		if ts == nil || ts.UID == old.UID || ts.Spec.Item.Name != routeID(orphan)+" on router "+newRouter {
			cur := getBundle(t, f.bundle)
			return fmt.Errorf("no Tombstone of %s on router %s: %+v; tombstones %v (made %v); resource %+v; conditions %+v", routeID(orphan), newRouter, ts,
				tombstoneItems(t, f.ns), f.tombstonesMade(), resourceStatus(cur, rgcResource), cur.Status.Conditions)
		}
		return nil
	})
	if err := f.routesUntouched(live, orphan)(); err != nil {
		t.Error(err)
	}
	if r, _ := f.sim.Router(newRouter); !slices.Equal(r.Routes, []openstacksim.Route{live, orphan}) {
		t.Errorf("new router's routes = %v, want both kept until the new countdown ends", r.Routes)
	}
}
