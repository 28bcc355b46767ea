package it

import (
	"slices"
	"testing"
	"time"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A route into the cluster CIDR whose next hop is no server is an orphan: it
// gets a Tombstone with the resource's delay and is removed at the deadline.
// The route to a live server, a route outside the CIDR (even to the same dead
// next hop) and an unparsable route stay.
func TestRouteGCOrphanRemovedAfterDelay(t *testing.T) {
	t.Parallel()
	live, orphan := rt("198.19.1.0/24", "10.180.0.3"), rt("198.19.3.0/24", "10.180.0.5")
	outside, unparsable := rt("10.0.0.0/8", "10.180.0.5"), rt("198.19.7.0/33", "10.180.0.5")
	f := newRouteGC(t, openstacksim.Config{}, live, orphan, outside, unparsable)
	f.sim.AddServerAt("node-1", "10.180.0.3")

	const delay = 4 * time.Second
	f.start(delay.String())
	ts := f.waitTombstone(orphan, delay.String())
	stamp, err := time.Parse(time.RFC3339, ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatalf("Tombstone stamp: %v", err)
	}
	f.waitRouteRemoved(orphan)

	writes := f.writes()
	if len(writes) != 1 || writes[0].Op != openstacksim.OpRemoveExtraRoutes {
		t.Fatalf("router writes = %+v, want one remove_extraroutes", writes)
	}
	if deadline := stamp.Add(delay); writes[0].Time.Before(deadline) {
		t.Errorf("route removed at %v, before its deadline %v", writes[0].Time, deadline)
	}
	if got, want := f.routes(), []openstacksim.Route{live, outside, unparsable}; !slices.Equal(got, want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	waitEventContaining(t, f.bundle, "Normal", limbov1alpha1.EventDeletionScheduled, routeID(orphan))
	f.waitReady("1 routes in 198.19.0.0/16, 0 orphaned; 1 servers; 1 unparsable routes, never touched")
}
