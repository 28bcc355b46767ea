package it

import (
	"fmt"
	"slices"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A router that changes between the plugin's read and its write answers 412;
// the plugin reads it again and retries, and the routes added meanwhile
// survive.
func TestRouteGCRetriesOn412(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{WithoutAtomicExtraRoutes: true})
	added := []openstacksim.Route{rt("198.19.8.0/24", "10.180.0.3"), rt("198.19.9.0/24", "10.180.0.3")}
	for _, r := range added { // a busy router: it changes under each of the first two writes
		f.sim.Before(openstacksim.OpUpdateRouter, func() {
			if err := f.sim.AddRoutes(rgcRouterID, r); err != nil {
				t.Error(err)
			}
		})
	}

	f.start("1s")
	f.waitTombstone(orphan, "1s")
	f.waitRouteRemoved(orphan)

	var got []string
	for _, c := range f.writes() {
		got = append(got, fmt.Sprintf("%s %d", c.IfMatch, c.Status))
	}
	if want := []string{"revision_number=1 412", "revision_number=2 412", "revision_number=3 200"}; !slices.Equal(got, want) {
		t.Errorf("router writes = %q, want %q", got, want)
	}
	if got, want := f.routes(), append([]openstacksim.Route{live}, added...); !slices.Equal(got, want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	waitEventContaining(t, f.bundle, "Normal", "DeletionScheduled", routeID(orphan))
}
