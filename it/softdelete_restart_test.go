package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A countdown lives in the cluster, not in the controller's memory: the controller
// stopped in the middle of a countdown and started again deletes the object at its
// original deadline, neither earlier nor a delay after the restart.
func TestSoftDeleteControllerRestartKeepsDeadline(t *testing.T) {
	ns := env.Namespace(t)
	// Long enough for the restart on a loaded machine to come well before the
	// deadline; a countdown restarted from scratch ends a delay after it.
	const delay = 20 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "restart", keep,
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	b = waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())
	gone := watchConfigMapDeletion(t, ns, "db")

	updateBundle(t, b, keep)
	stamped, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	stampValue := stamped.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]
	deadline := stamp.Add(delay)
	unchanged := func() error {
		if err := existsWithUID(t, configMapGVK, ns, "db", uid)(); err != nil {
			return err
		}
		if got := getObjectOrEmpty(t, ns, "db").GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; got != stampValue {
			return fmt.Errorf("stamp is %q, was %q", got, stampValue)
		}
		return nil
	}

	var restartedAt time.Time
	err := env.RestartController(func() {
		// Down for a while: long enough that a countdown restarted from scratch
		// would end well after the original deadline.
		testenv.Consistently(t, 4*time.Second, unchanged)
		restartedAt = time.Now()
	})
	if err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	if restartedAt.After(deadline.Add(-2 * time.Second)) {
		t.Fatalf("the test was too slow: restarted at %s, deadline %s", restartedAt, deadline)
	}

	testenv.Consistently(t, time.Until(deadline)-500*time.Millisecond, unchanged)
	at := gone.wait(t, testenv.DefaultTimeout)
	if at.Before(deadline) {
		t.Errorf("db deleted at %s, before its deadline %s", at, deadline)
	}
	// A countdown restarted by the restart would end at restartedAt+delay at
	// the soonest: the original deadline is well before (a bound of the bug,
	// not of the machine's speed).
	if restarted := restartedAt.Add(delay); !at.Before(restarted) {
		t.Errorf("db deleted at %s, not before %s (restarted at %s plus its delay): the countdown did not survive the restart; its deadline was %s", at, restarted, restartedAt, deadline)
	}
	noPendingDeletions(t, b)
}
