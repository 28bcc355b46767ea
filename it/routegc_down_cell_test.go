package it

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A Nova cell that is down hides its servers: from compute microversion 2.69
// Nova lists them as stubs with status UNKNOWN and no addresses (below it, by
// default, not at all, and still answers 200). Such a listing is incomplete,
// never "their routes are orphans": the resource is in Error naming the count,
// a Warning event says it, no Tombstone is made and the router is untouched.
// Once the cell is back, the real orphan goes and the down cell's node keeps
// its route.
func TestRouteGCDownCellOrphansNothing(t *testing.T) {
	t.Parallel()
	live, inDownCell, orphan := rt("198.19.1.0/24", "10.180.0.3"), rt("198.19.2.0/24", "10.180.0.4"), rt("198.19.3.0/24", "10.180.0.5")
	f := newRouteGC(t, openstacksim.Config{}, live, inDownCell, orphan)
	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Cell: "cell2", Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})
	f.sim.SetCellDown("cell2", true)

	f.start("0s") // no delay: any orphan would go at once
	const reason = "1 of 2 Nova servers listed with status UNKNOWN (in a down cell, without addresses): the server list is incomplete and treated as unknown, and no route is orphaned"
	f.waitError(`plugin "route-gc"`, reason)
	waitEventContaining(t, f.bundle, "Warning", "PluginFailed", reason)
	testenv.Consistently(t, 3*time.Second, func() error {
		if made := f.tombstonesMade(); len(made) != 0 {
			return fmt.Errorf("Tombstones made while the cell is down: %v", made)
		}
		return f.routesUntouched(live, inDownCell, orphan)()
	})

	f.sim.SetCellDown("cell2", false)
	f.waitRouteRemoved(orphan)
	f.waitReady("2 routes in 198.19.0.0/16, 0 orphaned; 2 servers")
	if got := f.routes(); !slices.Equal(got, []openstacksim.Route{live, inDownCell}) {
		t.Errorf("routes after the cell is back = %v, want %v", got, []openstacksim.Route{live, inDownCell})
	}
	if made := f.tombstonesMade(); !slices.Equal(made, []string{routeID(orphan)}) {
		t.Errorf("Tombstones made = %v, want only the orphan's", made)
	}
}
