package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
)

// The backoff of failed external deletes lives in the cluster, not in the
// controller's memory: a controller restarted while a Tombstone backs off (an
// upgrade, a leader change while a backend is down) waits out the backoff
// before it tries again, instead of sending every failing item's delete to the
// broken backend at once. Once the backoff is over, the retry comes.
func TestTombstoneBackoffSurvivesRestart(t *testing.T) {
	e := newExternalItems(t)
	e.domain.FailDeletes(testplugin.ErrInjected)
	e.orphan(t, "ext-backoff-restart", "1s")

	// After the fourth failure the next try is 8s away.
	const failures = 4
	var calls int
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if calls = e.domain.Deletes("orphan"); calls < failures {
			return fmt.Errorf("%d delete calls, want %d", calls, failures)
		}
		return nil
	})
	failedAt := time.Now()
	if calls > failures {
		t.Skipf("the backoff moved on while the test waited (%d delete calls)", calls)
	}

	noRetry := func() error {
		if n := e.domain.Deletes("orphan"); n != calls {
			return fmt.Errorf("%d delete calls %v after failure %d, whose backoff is 8s: the backoff did not survive the restart",
				n-calls, time.Since(failedAt).Round(time.Millisecond), failures)
		}
		return nil
	}
	if err := env.RestartController(nil); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	// 5s after the failure: well inside the 8s backoff, and after the restarted
	// controller's first reconcile of every Tombstone.
	testenv.Consistently(t, time.Until(failedAt.Add(5*time.Second)), noRetry)

	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if n := e.domain.Deletes("orphan"); n <= calls {
			return fmt.Errorf("no retry after the backoff: %d delete calls, as after failure %d", n, failures)
		}
		return nil
	})
	e.domain.FailDeletes(nil)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Exists("orphan") {
			return fmt.Errorf("the item still exists after %d delete calls", e.domain.Deletes("orphan"))
		}
		return noTombstones(t, e.ns)()
	})
}
