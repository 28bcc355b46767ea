package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
)

// A Tombstone's progress (each attempt writes its status twice) runs its
// Bundle's pass, which plans again: paced as a plugin's watched kinds are. A
// mass deletion against a refusing backend ran a plan of the Bundle at every
// attempt of every item (namespace-gc's StorageOS listing, node-removal's
// listing of every Node), several a second, to report progress.
func TestTombstoneEventsArePaced(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	const orphans = 30
	for i := range orphans {
		e.domain.Set(fmt.Sprintf("orphan-%02d", i), false)
	}
	e.domain.FailDeletes(testplugin.ErrInjected)
	b := waitReady(t, createBundle(t, e.ns, "attempts", e.resource("1s")))
	interval := env.ControllerOptions().PluginEventInterval
	start := time.Now()
	before := len(e.domain.PlanCalls())
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		list := tombstones(t, e.ns)
		if len(list) < orphans+1 {
			return fmt.Errorf("%d Tombstones, want %d", len(list), orphans+1)
		}
		for _, ts := range list {
			if ts.Status.Attempts < 2 {
				return fmt.Errorf("Tombstone %s: %d attempts, want 2 of each", ts.Name, ts.Status.Attempts)
			}
		}
		return nil
	})
	elapsed := time.Since(start)
	plans := len(e.domain.PlanCalls()) - before
	t.Logf("%d Tombstones' attempts ran %d plans of Bundle %s in %v", orphans+1, plans, b.Name, elapsed.Round(time.Millisecond))
	// One paced pass per interval, one at each of the countdowns' ends (the
	// pass that finds them due), and one more begun before the first attempt.
	if most := 3 + int(elapsed/interval); plans > most {
		t.Errorf("%d Tombstones, 2 attempts each, ran %d plans in %v: want at most %d (one per %v)", orphans+1, plans, elapsed.Round(time.Millisecond), most, interval)
	}
}
