package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphan in limbo shows in its Bundle's status.pendingDeletions (the PENDING
// and NEXT-DELETION columns of kubectl get bundles) as soon as its Tombstone
// exists, once: one entry per Tombstone, without waiting for an unrelated event
// to re-run the Bundle.
func TestNamespaceGCPendingDeletionIsListed(t *testing.T) {
	t.Parallel()
	// A GC orphan is the sharp case: after the GC run that finds it, nothing else
	// happens to the Bundle for gcInterval.
	t.Run("GC orphan", func(t *testing.T) {
		t.Parallel()
		f := newNSGCFixture(t)
		never := f.strayNamespace("nsgc-pending-")
		b := f.bundle(t, "1h", `"gcDelay":"1s"`, `"gcInterval":"1h"`)
		ts := f.waitTombstone(t, never, "1h")
		waitListedOnce(t, b, ts, never)
	})
	// A deletion orphan: the Namespace's termination re-runs the Bundle a few
	// times, the last of them up to --plugin-event-interval after its events.
	t.Run("deletion orphan", func(t *testing.T) {
		t.Parallel()
		f := newNSGCFixture(t)
		app, b, ts := f.deletedApp(t, "nsgc-pending-", 0, "1h")
		waitListedOnce(t, b, ts, app)
		waitK8sNamespaceGone(t, app)
		testenv.Consistently(t, env.ControllerOptions().PluginEventInterval+2*time.Second, func() error { return listedOnce(getBundle(t, b), ts, app) })
	})
}

func waitListedOnce(t testing.TB, b *limbov1alpha1.Bundle, ts *limbov1alpha1.Tombstone, item string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() error { return listedOnce(getBundle(t, b), ts, item) })
}

// listedOnce checks that the Bundle lists the Tombstone exactly once among its
// pending deletions, with its deadline and item, and counts it once.
func listedOnce(cur *limbov1alpha1.Bundle, ts *limbov1alpha1.Tombstone, item string) error {
	var found []limbov1alpha1.PendingDeletion
	for _, p := range cur.Status.PendingDeletions {
		if p.Kind == "Tombstone" && p.Name == ts.Name {
			found = append(found, p)
		}
	}
	switch {
	case len(found) == 0:
		return fmt.Errorf("Tombstone %s (item %s) is not in pendingDeletions %+v", ts.Name, item, cur.Status.PendingDeletions)
	case len(found) > 1:
		return fmt.Errorf("Tombstone %s is listed %d times in pendingDeletions: %+v", ts.Name, len(found), found)
	case found[0].DeleteAfter == nil || !strings.Contains(found[0].Message, item):
		return fmt.Errorf("pending deletion %+v: want a deadline and the item's name", found[0])
	case cur.Status.PendingDeletionCount != 1:
		return fmt.Errorf("pendingDeletionCount = %d, want 1", cur.Status.PendingDeletionCount)
	}
	return nil
}
