package it

import (
	"fmt"
	"testing"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A server that comes back (its address is a next hop again) before the
// deadline cancels the route's Tombstone; the route is never touched.
func TestRouteGCServerBackCancels(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})

	f.start("1h")
	f.waitTombstone(orphan, "1h")
	f.waitReady("2 routes in 198.19.0.0/16, 1 orphaned; 1 servers")

	f.sim.AddServerAt("node-2", "10.180.0.4")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := f.tombstoneOf(orphan); ts != nil {
			return fmt.Errorf("the Tombstone of %s is still there", routeID(orphan))
		}
		return nil
	})
	waitEventContaining(t, f.bundle, "Normal", limbov1alpha1.EventDeletionCancelled, routeID(orphan))
	f.waitReady("2 routes in 198.19.0.0/16, 0 orphaned; 2 servers")
	if err := f.routesUntouched(live, orphan)(); err != nil {
		t.Error(err)
	}
}
