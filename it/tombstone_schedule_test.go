package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphaned external item gets a Tombstone, stamped with the plugin resource's
// delay; at the deadline the item is deleted and the Tombstone goes.
func TestTombstoneScheduleThenDelete(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	// Long enough that the Tombstone is still there when waitOneTombstone (a
	// List poll) looks for it, under load: the stamp is rounded to the second.
	const delay = 10 * time.Second
	_, ts := e.orphan(t, "ext", delay.String())
	if ts.Spec.Item.ID != "orphan" || ts.Spec.Plugin != testplugin.Name || ts.Spec.Resource != "items" ||
		ts.Labels[limbov1alpha1.LabelBundle] != "ext" || ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] != delay.String() ||
		len(ts.Finalizers) != 1 || ts.Finalizers[0] != limbov1alpha1.FinalizerHardDelete {
		t.Errorf("tombstone = %+v", ts)
	}
	stamp, err := time.Parse(time.RFC3339, ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatalf("tombstone stamp: %v", err)
	}
	deadline := stamp.Add(delay)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Exists("orphan") || len(tombstones(t, e.ns)) != 0 {
			return fmt.Errorf("orphan exists=%v, tombstones=%d", e.domain.Exists("orphan"), len(tombstones(t, e.ns)))
		}
		return nil
	})
	// When the delete came, as the domain saw it: the wait above has no bound
	// below.
	if calls := e.domain.DeleteCalls("orphan"); len(calls) == 0 || calls[0].Before(deadline) {
		t.Errorf("orphan's delete calls came at %v, want the first at its deadline %s or later", calls, deadline)
	}
	if !e.domain.Exists("keep") || e.domain.Deletes("orphan") != 1 {
		t.Errorf("keep exists=%v, orphan deletes=%d (want true, 1)", e.domain.Exists("keep"), e.domain.Deletes("orphan"))
	}
}
