package it

import (
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Deadlines are honoured to the second: a countdown requeues at its deadline and
// never waits for a resync, so a 2s countdown ends in a delete shortly after
// stamp+2s — and never before.
// Not parallel: it measures how late the delete comes, which other tests' load
// would blur.
func TestSoftDeleteDeadlineToTheSecond(t *testing.T) {
	ns := env.Namespace(t)
	const delay = 2 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "deadline", keep,
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	b = waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())
	gone := watchConfigMapDeletion(t, ns, "db")

	updateBundle(t, b, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	deadline := stamp.Add(delay)
	testenv.Consistently(t, time.Until(deadline)-200*time.Millisecond, existsWithUID(t, configMapGVK, ns, "db", uid))
	at := gone.wait(t, testenv.DefaultTimeout)
	if at.Before(deadline) {
		t.Fatalf("db deleted at %s, before its deadline %s", at.Format(time.RFC3339Nano), deadline)
	}
	if late := at.Sub(deadline); late > 1500*time.Millisecond {
		t.Errorf("db deleted %v after its deadline %s (stamp %s): the countdown did not requeue at its deadline", late, deadline, stamp)
	} else {
		t.Logf("deleted %v after the deadline", late)
	}

	noPendingDeletions(t, b)
}
