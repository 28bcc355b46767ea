package it

import (
	"slices"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// Without extraroute-atomic, an orphan is removed by rewriting the route list
// read at the deadline, guarded by the router's revision (If-Match): a route
// added while the countdown ran is in that list and survives — the original
// rewrote the list it had read at its poll.
func TestRouteGCRevisionGuardedRemoval(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{WithoutAtomicExtraRoutes: true})

	f.start("5s")
	f.waitTombstone(orphan, "5s")
	added := rt("198.19.9.0/24", "10.180.0.3")
	if err := f.sim.AddRoutes(rgcRouterID, added); err != nil { // the cloud's route controller, during the countdown
		t.Fatal(err)
	}
	f.waitRouteRemoved(orphan)

	if got, want := f.routes(), []openstacksim.Route{live, added}; !slices.Equal(got, want) {
		t.Errorf("routes = %v, want %v: the route added during the countdown was lost", got, want)
	}
	router, _ := f.sim.Router(rgcRouterID)
	writes := f.writes()
	// Revisions: 1 at start, 2 after the addition, 3 after the removal.
	if len(writes) != 1 || writes[0].Op != openstacksim.OpUpdateRouter || writes[0].IfMatch != "revision_number=2" || writes[0].Status != 200 || router.RevisionNumber != 3 {
		t.Errorf("router writes = %+v (revision now %d), want one PUT with If-Match revision_number=2", writes, router.RevisionNumber)
	}
	f.waitReady("2 routes in 198.19.0.0/16, 0 orphaned; 1 servers")
}
