package routegc_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
)

// Routes that fall due together (a node pool scaled down) each took a listing
// of every Nova server, one after the other behind the resource's turn: the
// later ones waited past the plugin call's 30 s, failed and were retried with
// backoff. Removals queued behind a running one share one listing, taken after
// they were all asked for; a plan waiting among them goes first, and its
// listing serves them.
func TestQueuedRemovalsShareOneListing(t *testing.T) {
	const queued = 5
	for _, tc := range []struct {
		name         string
		planWaiting  bool
		wantListings int
	}{
		{"behind a removal", false, 2},                // the running removal's, and the first queued one's
		{"behind a removal, a plan waiting", true, 2}, // the running removal's, and the plan's
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSharingFixture(t)
			keep := route("198.19.1.0/24", "10.180.0.3")
			orphans := orphanRoutes(queued + 1)
			f.sim.AddRouter(routerID, "cluster", append([]openstacksim.Route{keep}, orphans...)...)
			f.sim.AddServerAt("node-1", "10.180.0.3")

			arrived, release := f.hold(openstacksim.OpListServers)
			running := f.removeAsync(itemID(orphans[0]))
			wait(t, arrived, "the running removal's listing")
			var waiting []<-chan error
			for _, r := range orphans[1:] {
				waiting = append(waiting, f.removeAsync(itemID(r)))
			}
			waitForTurns(t, "acquireRemoval", queued)
			var planned chan error
			if tc.planWaiting {
				planned = make(chan error, 1)
				go func() {
					_, err := f.plan(t0)
					planned <- err
				}()
				waitForTurns(t, "acquirePlan", 1)
			}
			release()

			for i, done := range append([]<-chan error{running}, waiting...) {
				if err := wait(t, done, "a removal"); err != nil {
					t.Errorf("removal of %s: %v", itemID(orphans[i]), err)
				}
			}
			if planned != nil {
				if err := wait(t, planned, "the plan"); err != nil {
					t.Errorf("Plan: %v", err)
				}
			}
			if n := f.sim.Count(openstacksim.OpListServers); n != tc.wantListings {
				t.Errorf("%d server listings for %d removals, want %d", n, queued+1, tc.wantListings)
			}
			if got := f.routes(); !reflect.DeepEqual(got, []openstacksim.Route{keep}) {
				t.Errorf("routes = %v, want %v", got, keep)
			}
		})
	}
}

// A listing is shared only by the removals asked for before it started: a
// removal asked for while the queued ones run lists again, and the route of a
// server made between the shared listing and that removal's request is kept
// (refused: its Tombstone is cancelled).
func TestRemovalAskedAfterAListingStartedListsAgain(t *testing.T) {
	f := newSharingFixture(t)
	orphans := orphanRoutes(3)
	comeback := route("198.19.50.0/24", "10.180.0.50")
	f.sim.AddRouter(routerID, "cluster", append(orphans, comeback)...)
	f.sim.AddServerAt("node-1", "10.180.0.3")

	f.sim.Before(openstacksim.OpRemoveExtraRoutes, func() {}) // the running removal's
	updating, releaseUpdate := f.hold(openstacksim.OpRemoveExtraRoutes)
	running, queued, release := f.twoQueuedBehindAListing(t, orphans)
	release()
	// The first queued removal listed, and removes its route.
	wait(t, updating, "the first queued removal's update")
	f.sim.AddServerAt("node-50", comeback.NextHop)
	late := f.removeAsync(itemID(comeback))
	waitForTurns(t, "acquireRemoval", 2) // the second queued removal and the late one
	releaseUpdate()

	for i, done := range append([]<-chan error{running}, queued...) {
		if err := wait(t, done, "a removal"); err != nil {
			t.Errorf("removal of %s: %v", itemID(orphans[i]), err)
		}
	}
	if err := wait(t, late, "the late removal"); !errors.Is(err, plugin.ErrNotResponsible) {
		t.Errorf("removal of %s, asked for after its server was made: %v, want it refused (plugin.ErrNotResponsible)", itemID(comeback), err)
	}
	if got := f.routes(); !reflect.DeepEqual(got, []openstacksim.Route{comeback}) {
		t.Errorf("routes = %v, want %v", got, comeback)
	}
	if n := f.sim.Count(openstacksim.OpListServers); n != 3 {
		t.Errorf("%d server listings, want 3: the running removal's, the one the queued removals shared, the late removal's", n)
	}
}

// A failed listing is never shared: a removal waiting behind it lists again.
// One that failed also voids the listing before it, which the waiting
// removals could have used: a plan that finds a Nova cell down stops the
// removals queued behind it, as their own listing would.
func TestFailedListingNotShared(t *testing.T) {
	t.Run("the shared listing failed", func(t *testing.T) {
		f := newSharingFixture(t)
		orphans := orphanRoutes(3)
		f.sim.AddRouter(routerID, "cluster", orphans...)
		f.sim.AddServerAt("node-1", "10.180.0.3")

		running, queued, release := f.twoQueuedBehindAListing(t, orphans)
		f.sim.Inject(openstacksim.OpListServers, openstacksim.Fault{Status: 500, Times: 1}) // the next listing
		release()

		if err := wait(t, running, "the running removal"); err != nil {
			t.Errorf("the running removal: %v", err)
		}
		var failed []string
		for i, done := range queued {
			if err := wait(t, done, "a queued removal"); err != nil {
				if errors.Is(err, plugin.ErrNotResponsible) || !strings.Contains(err.Error(), "list Nova servers") {
					t.Errorf("removal of %s: %v, want the listing's error", itemID(orphans[1+i]), err)
				}
				failed = append(failed, itemID(orphans[1+i]))
			}
		}
		if len(failed) != 1 {
			t.Errorf("failed removals: %v, want the one whose listing failed", failed)
		}
		if n := f.sim.Count(openstacksim.OpListServers); n != 3 {
			t.Errorf("%d server listings, want 3: the running removal's, the failed one, the next queued removal's", n)
		}
		if got := len(f.routes()); got != 1 {
			t.Errorf("routes = %v, want the route of the failed removal only", f.routes())
		}
	})

	t.Run("a failed listing voids the one before", func(t *testing.T) {
		f := newSharingFixture(t)
		orphans := orphanRoutes(3)
		f.sim.AddRouter(routerID, "cluster", orphans...)
		f.sim.AddServerAt("node-1", "10.180.0.3")
		f.sim.AddServer(openstacksim.NovaServer{Name: "node-2", Cell: "cell2",
			Addresses: map[string][]openstacksim.Address{"cluster-net": {{Addr: "10.180.0.4"}}}})

		f.sim.Before(openstacksim.OpRemoveExtraRoutes, func() {}) // the running removal's
		updating, releaseUpdate := f.hold(openstacksim.OpRemoveExtraRoutes)
		running, queued, release := f.twoQueuedBehindAListing(t, orphans)
		release()
		wait(t, updating, "the first queued removal's update") // it listed after both were asked for
		planned := make(chan error, 1)
		go func() {
			_, err := f.plan(t0)
			planned <- err
		}()
		waitForTurns(t, "acquirePlan", 1)
		f.sim.SetCellDown("cell2", true)
		releaseUpdate()

		if err := wait(t, planned, "the plan"); !errors.Is(err, routegc.ErrIncompleteServers) {
			t.Errorf("Plan with a cell down: %v, want routegc.ErrIncompleteServers", err)
		}
		if err := wait(t, running, "the running removal"); err != nil {
			t.Errorf("the running removal: %v", err)
		}
		var removed, refused int
		for i, done := range queued {
			switch err := wait(t, done, "a queued removal"); {
			case err == nil:
				removed++
			case errors.Is(err, routegc.ErrIncompleteServers):
				refused++
			default:
				t.Errorf("removal of %s: %v", itemID(orphans[1+i]), err)
			}
		}
		if removed != 1 || refused != 1 {
			t.Errorf("%d queued removals done and %d refused, want 1 of each: the one behind the plan lists again and sees the cell down", removed, refused)
		}
		if n := f.sim.Count(openstacksim.OpListServers); n != 4 {
			t.Errorf("%d server listings, want 4: the running removal's, the first queued removal's, the plan's, the second queued removal's", n)
		}
	})
}

// A listing is shared only by removals with the same client: credentials
// changed in the Secret (or a spec naming another cloud, region or user) may
// be another project's, whose servers the listing does not show.
func TestListingNotSharedAcrossCredentials(t *testing.T) {
	f := newSharingFixture(t)
	orphans := orphanRoutes(3)
	f.sim.AddRouter(routerID, "cluster", orphans...)
	f.sim.AddServerAt("node-1", "10.180.0.3")

	f.sim.Before(openstacksim.OpRemoveExtraRoutes, func() {}) // the running removal's
	updating, releaseUpdate := f.hold(openstacksim.OpRemoveExtraRoutes)
	running, queued, release := f.twoQueuedBehindAListing(t, orphans)
	release()
	wait(t, updating, "the first queued removal's update") // it listed after both were asked for
	c := f.sim.Config()
	f.setSecret(map[string]string{routegc.KeyUsername: c.Username, routegc.KeyPassword: c.Password,
		routegc.KeyProjectID: c.ProjectID, routegc.KeyUserDomainName: c.UserDomainName})
	releaseUpdate()

	for i, done := range append([]<-chan error{running}, queued...) {
		if err := wait(t, done, "a removal"); err != nil {
			t.Errorf("removal of %s: %v", itemID(orphans[i]), err)
		}
	}
	if n := f.sim.Count(openstacksim.OpCreateToken); n != 2 {
		t.Fatalf("%d logins, want 2: the changed Secret is a new client", n)
	}
	if n := f.sim.Count(openstacksim.OpListServers); n != 3 {
		t.Errorf("%d server listings, want 3: the running removal's, the first queued removal's, and the new client's", n)
	}
}

// twoQueuedBehindAListing starts the removal of orphans[0] and holds its
// server listing, then asks for the removals of orphans[1] and orphans[2],
// which queue for the resource's turn. release lets the listing go on.
func (f *fixture) twoQueuedBehindAListing(t *testing.T, orphans []openstacksim.Route) (running <-chan error, queued []<-chan error, release func()) {
	t.Helper()
	arrived, release := f.hold(openstacksim.OpListServers)
	running = f.removeAsync(itemID(orphans[0]))
	wait(t, arrived, "the running removal's listing")
	queued = []<-chan error{f.removeAsync(itemID(orphans[1])), f.removeAsync(itemID(orphans[2]))}
	waitForTurns(t, "acquireRemoval", 2)
	return running, queued, release
}

// newSharingFixture is a fixture whose plugin's clock moves on with every
// reading, as a real one does between two readings: which listing a removal
// may use depends on the order of instants.
func newSharingFixture(t *testing.T) *fixture {
	f := newFixture(t, openstacksim.Config{}, nil)
	var ticks atomic.Int64
	f.plugin = routegc.New(routegc.Options{Metrics: f.metrics, Now: func() time.Time {
		return t0.Add(time.Duration(ticks.Add(1)) * time.Millisecond)
	}})
	return f
}

// orphanRoutes are n routes in the cluster CIDR whose next hops are no
// fixture server's.
func orphanRoutes(n int) []openstacksim.Route {
	var out []openstacksim.Route
	for i := range n {
		out = append(out, route(fmt.Sprintf("198.19.%d.0/24", 10+i), fmt.Sprintf("10.180.1.%d", 10+i)))
	}
	return out
}

func itemID(r openstacksim.Route) string { return r.Destination + "->" + r.NextHop }

// removeAsync removes route id in a goroutine of its own; its error comes on
// the channel.
func (f *fixture) removeAsync(id string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f.remove(id) }()
	return done
}

// hold makes the next request of op that has no hook before it (Before) wait,
// once it arrived in the simulator, until release is called (at the latest
// when the test ends); arrived is closed when it arrives.
func (f *fixture) hold(op string) (arrived <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(out) })
	f.t.Cleanup(release)
	f.sim.Before(op, func() {
		close(in)
		<-out
	})
	return in, release
}

// wait receives from ch, or fails the test after a minute.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("still waiting for %s after a minute", what)
		panic("unreachable")
	}
}

// waitForTurns waits until n goroutines wait in the resource state's method
// (acquireRemoval or acquirePlan) for the resource's turn. Nothing the plugin
// does tells that a call waits, so the goroutines' stacks are polled, until a
// deadline.
func waitForTurns(t *testing.T, method string, n int) {
	t.Helper()
	frame := "routegc.(*resourceState)." + method + "("
	deadline := time.Now().Add(time.Minute)
	for {
		buf := make([]byte, 1<<20)
		for {
			if m := runtime.Stack(buf, true); m < len(buf) {
				buf = buf[:m]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		got := 0
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, frame) {
				got++
			}
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait in %s, want %d", got, method, n)
		}
		time.Sleep(time.Millisecond) // polling, not synchronisation
	}
}
