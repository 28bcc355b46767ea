package it

import (
	"slices"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// `kubectl delete tombstone` removes the route now, whatever the delay.
func TestRouteGCDeleteTombstoneForces(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})

	f.start("1h")
	ts := f.waitTombstone(orphan, "1h")
	if !f.hasRoute(orphan) {
		t.Fatal("removed before the deadline, an hour away")
	}
	if out, err := kubectl(t, "delete", "tombstone", "-n", f.ns, ts.Name); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	f.waitRouteRemoved(orphan)
	if got := f.routes(); !slices.Equal(got, []openstacksim.Route{live}) {
		t.Errorf("routes = %v, want only %v", got, live)
	}
	if n := len(f.writes()); n != 1 {
		t.Errorf("%d router writes, want 1", n)
	}
	f.waitReady("1 routes in 198.19.0.0/16, 0 orphaned; 1 servers")
}
