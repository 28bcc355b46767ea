package it

import (
	"slices"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// Where Neutron lists extraroute-atomic, an orphan is removed by one
// remove_extraroutes call naming only that route: the route list is never
// rewritten, so the routes other clients keep adding are safe by construction.
func TestRouteGCAtomicRemoval(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})
	added := rt("198.19.9.0/24", "10.180.0.3")
	// Another client adds a route just before the removal.
	f.sim.Before(openstacksim.OpRemoveExtraRoutes, func() {
		if err := f.sim.AddRoutes(rgcRouterID, added); err != nil {
			t.Error(err)
		}
	})

	f.start("1s")
	f.waitRouteRemoved(orphan)
	writes := f.writes()
	if len(writes) != 1 || writes[0].Op != openstacksim.OpRemoveExtraRoutes || writes[0].Status != 200 {
		t.Errorf("router writes = %+v, want one successful remove_extraroutes", writes)
	}
	if got, want := f.routes(), []openstacksim.Route{live, added}; !slices.Equal(got, want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	if n := f.sim.Count(openstacksim.OpGetExtension); n == 0 {
		t.Error("the plugin never asked Neutron for the extension")
	}
}
