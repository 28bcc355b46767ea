package it

import (
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

// route-gc's counters, served on the controller's /metrics: a route found
// orphaned, a route removed, and a server listing that fails.
// Not parallel: it expects exact increments of process-wide counters.
func TestRouteGCMetrics(t *testing.T) {
	const (
		orphaned = "limbo_routegc_orphaned_routes_total"
		removed  = "limbo_routegc_removed_routes_total"
		failures = "limbo_routegc_failures_total"
	)
	live, orphan := rt("198.19.1.0/24", "10.180.0.3"), rt("198.19.2.0/24", "10.180.0.4")
	f := newRouteGC(t, openstacksim.Config{}, live, orphan)
	node := f.sim.AddServerAt("node-1", "10.180.0.3")
	orphanedBefore, removedBefore := counterValue(t, orphaned), counterValue(t, removed)
	failuresBefore := counterValue(t, failures, "operation", routegc.OpListServers)

	f.start("1s")
	f.waitRouteRemoved(orphan)
	if got := counterValue(t, orphaned) - orphanedBefore; got != 1 {
		t.Errorf("%s went up by %v, want 1", orphaned, got)
	}
	if got := counterValue(t, removed) - removedBefore; got != 1 {
		t.Errorf("%s went up by %v, want 1", removed, got)
	}

	f.sim.Inject(openstacksim.OpListServers, openstacksim.Fault{Status: 500, Times: 1})
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if got := counterValue(t, failures, "operation", routegc.OpListServers) - failuresBefore; got < 1 {
			return fmt.Errorf(`%s{operation="list_servers"} went up by %v, want ≥ 1`, failures, got)
		}
		return nil
	})
	f.sim.DeleteServer(node.ID) // an empty listing counts as a failure too
	before := counterValue(t, failures, "operation", routegc.OpListServers)
	f.waitError("no Nova server listed")
	if got := counterValue(t, failures, "operation", routegc.OpListServers); got <= before {
		t.Errorf(`an empty server list did not count in %s{operation="list_servers"}`, failures)
	}
}
