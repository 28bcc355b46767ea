package it

import (
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// Nova listing no server at all is "unknown", never "every route is an
// orphan" (the original's failure): the resource is in Error with the reason,
// a Warning event says it, nothing is orphaned and the router is untouched.
// Once servers are listed again, the plugin goes on.
func TestRouteGCEmptyServerListOrphansNothing(t *testing.T) {
	t.Parallel()
	a, b := rt("198.19.1.0/24", "10.180.0.3"), rt("198.19.2.0/24", "10.180.0.4")
	f := newRouteGC(t, openstacksim.Config{}, a, b)

	f.start("0s") // no delay: any orphan would go at once
	const reason = "no Nova server listed for the project: the server list is treated as unknown, and no route is orphaned"
	f.waitError(`plugin "route-gc"`, reason)
	waitEventContaining(t, f.bundle, "Warning", "PluginFailed", reason)
	testenv.Consistently(t, 3*time.Second, func() error {
		if err := noTombstones(t, f.ns)(); err != nil {
			return err
		}
		return f.routesUntouched(a, b)()
	})

	f.sim.AddServerAt("node-1", "10.180.0.3")
	f.waitRouteRemoved(b)
	f.waitReady("1 routes in 198.19.0.0/16, 0 orphaned; 1 servers")
}
