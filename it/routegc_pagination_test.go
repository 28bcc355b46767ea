package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

// Servers on every page count: with Nova's max_limit at 50, 230 servers take
// five pages; routes to the newest server (first page) and to the oldest (last
// page) are desired, and only the route to no server is an orphan. The message
// says the listing took several pages (a down cell shows on the first only),
// and a Warning event says it once.
func TestRouteGCPaginatesServers(t *testing.T) {
	t.Parallel()
	const servers = 230
	oldest, newest, orphan := rt("198.19.1.0/24", "10.180.0.10"), rt("198.19.2.0/24", fmt.Sprintf("10.180.%d.%d", (servers-1+10)/256, (servers-1+10)%256)), rt("198.19.3.0/24", "10.180.9.9")
	f := newRouteGC(t, openstacksim.Config{MaxLimit: 50}, oldest, newest, orphan)
	for i := range servers {
		n := i + 10
		f.sim.AddServerAt(fmt.Sprintf("node-%d", i), fmt.Sprintf("10.180.%d.%d", n/256, n%256))
	}

	f.start("1h")
	f.waitTombstone(orphan, "1h")
	f.waitReady(fmt.Sprintf("3 routes in 198.19.0.0/16, 1 orphaned; %d servers in 5 pages "+
		"(a down Nova cell shows on the first page only: Nova needs list_records_by_skipping_down_cells = false)", servers))
	waitEventContaining(t, f.bundle, "Warning", routegc.EventServersPaged, "list_records_by_skipping_down_cells is false")
	testenv.Consistently(t, 3*time.Second, func() error {
		if list := tombstones(t, f.ns); len(list) != 1 {
			return fmt.Errorf("tombstones = %v, want only the orphan's", tombstoneItems(t, f.ns))
		}
		return nil
	})
	// The first poll: page 1 without any parameter (a limit would turn a down
	// cell's stubs off), pages 2 to 5 after the last server of the page before,
	// as Nova links them (without a limit either).
	calls := f.sim.Calls(openstacksim.OpListServers)
	if len(calls) < 5 {
		t.Fatalf("%d server pages read, want at least 5", len(calls))
	}
	for i, c := range calls[:5] {
		if hasMarker := strings.Contains(c.Path, "marker="); hasMarker != (i > 0) || strings.Contains(c.Path, "limit=") || c.Status != 200 {
			t.Errorf("page %d: GET %s = %d", i+1, c.Path, c.Status)
		}
	}
}
