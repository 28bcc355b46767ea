package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The backoff of failed external deletes lives in the cluster, not in the
// controller's memory: a controller restarted while a Tombstone backs off (an
// upgrade, a leader change while a backend is down) waits out the backoff
// before it tries again, instead of sending every failing item's delete to the
// broken backend at once. Once the backoff is over, the retry comes.
func TestTombstoneBackoffSurvivesRestart(t *testing.T) {
	e := newExternalItems(t)
	e.domain.FailDeletes(testplugin.ErrInjected)
	_, ts := e.orphan(t, "ext-backoff-restart", "1s")

	// After the fourth failure the next try is 8s away.
	const failures = 4
	var calls []time.Time
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if calls = e.domain.DeleteCalls("orphan"); len(calls) < failures {
			return fmt.Errorf("%d delete calls, want %d", len(calls), failures)
		}
		return nil
	})
	if len(calls) > failures {
		t.Skipf("the backoff moved on while the test waited (%d delete calls)", len(calls))
	}
	// The backoff counts from the fourth attempt's start, as the Tombstone's
	// status keeps it (to the second, written before the call): the retry
	// comes 8s after it at the soonest.
	failedAt := calls[failures-1]
	var retryFrom time.Time
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Tombstone
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(&ts), &cur); err != nil {
			return err
		}
		if cur.Status.Attempts != failures || cur.Status.LastAttemptTime == nil {
			return fmt.Errorf("status.attempts %d, want %d", cur.Status.Attempts, failures)
		}
		retryFrom = cur.Status.LastAttemptTime.Add(8 * time.Second)
		return nil
	})

	var plans int
	if err := env.RestartController(func() { plans = len(e.domain.PlanCalls()) }); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	// The restarted controller's first pass of the Bundle (a Plan call) shows
	// that its caches have synced and its controllers run, the Tombstone's
	// too: a backoff lost in the restart would have the retry come now, well
	// before retryFrom.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if len(e.domain.PlanCalls()) == plans {
			return fmt.Errorf("the restarted controller has not planned the Bundle")
		}
		return nil
	})
	if started := e.domain.PlanCalls()[plans]; started.After(retryFrom.Add(-2 * time.Second)) {
		// A machine this loaded proves nothing either way: not a failure.
		t.Skipf("the machine was too slow: the restarted controller planned at %s, %v after failure %d, whose backoff is 8s",
			started, started.Sub(failedAt), failures)
	}

	// The retry goes through: the backoff's end, not a failure, is what is
	// waited for.
	e.domain.FailDeletes(nil)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Exists("orphan") {
			return fmt.Errorf("the item still exists after %d delete calls", len(e.domain.DeleteCalls("orphan")))
		}
		return noTombstones(t, e.ns)()
	})
	if calls := e.domain.DeleteCalls("orphan"); len(calls) != failures+1 || calls[failures].Before(retryFrom) {
		t.Errorf("delete calls at %v: want one retry, %v or more after failure %d (its backoff is 8s, from its start kept to the second): the backoff did not survive the restart",
			calls, retryFrom.Sub(failedAt), failures)
	}
}
