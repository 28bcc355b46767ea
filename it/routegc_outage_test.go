package it

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// An OpenStack outage at the deadline loses nothing: the resource shows the
// error, the removal fails and is retried with backoff (status.lastError), no
// route is touched; when OpenStack is back, the orphan goes and everything
// else stays.
func TestRouteGCOutage(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})

	f.start("3s")
	f.waitTombstone(orphan, "3s")
	f.sim.SetOutage("", true)
	f.waitError(`plugin "route-gc"`, "503")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		ts := f.tombstoneOf(orphan)
		if ts == nil {
			return fmt.Errorf("the Tombstone of %s is gone during the outage", routeID(orphan))
		}
		if ts.Status.Attempts < 1 || !strings.Contains(ts.Status.LastError, "503") {
			return fmt.Errorf("Tombstone status = %+v, want a failed attempt with the 503", ts.Status)
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, f.routesUntouched(live, orphan))

	f.sim.SetOutage("", false)
	f.waitRouteRemoved(orphan)
	if got := f.routes(); !slices.Equal(got, []openstacksim.Route{live}) {
		t.Errorf("routes after the outage = %v, want only %v", got, live)
	}
	f.waitReady("1 routes in 198.19.0.0/16, 0 orphaned; 1 servers")
}
