package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A pending external item is listed in its Bundle's pendingDeletions, once, as its
// Tombstone with its deadline, as soon as its Tombstone exists; and it leaves the
// list once the item is gone.
func TestTombstoneListedInPendingDeletions(t *testing.T) {
	t.Parallel()
	// waitListed waits until pendingDeletions lists exactly ts and checks the entry.
	waitListed := func(t *testing.T, b *limbov1alpha1.Bundle, ts limbov1alpha1.Tombstone) limbov1alpha1.PendingDeletion {
		t.Helper()
		stamp, err := time.Parse(time.RFC3339, ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
		if err != nil {
			t.Fatalf("tombstone stamp: %v", err)
		}
		deadline := stamp.Add(time.Hour)
		cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if len(cur.Status.PendingDeletions) == 0 {
				return fmt.Errorf("pendingDeletions is empty, want the Tombstone %s", ts.Name)
			}
			return nil
		})
		want := limbov1alpha1.PendingDeletion{
			APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: ts.Namespace, Name: ts.Name,
			Message: `TestItem "orphan"`,
		}
		got := cur.Status.PendingDeletions
		if len(got) != 1 || got[0].DeleteAfter == nil || !got[0].DeleteAfter.Time.Equal(deadline) ||
			got[0].APIVersion != want.APIVersion || got[0].Kind != want.Kind || got[0].Namespace != want.Namespace || got[0].Name != want.Name || got[0].Message != want.Message {
			t.Errorf("pendingDeletions = %+v, want only %+v deleted after %s", got, want, deadline)
		}
		if cur.Status.PendingDeletionCount != 1 || cur.Status.NextDeletion == nil || !cur.Status.NextDeletion.Time.Equal(deadline) {
			t.Errorf("pendingDeletionCount/nextDeletion = %d/%v, want 1/%s", cur.Status.PendingDeletionCount, cur.Status.NextDeletion, deadline)
		}
		return got[0]
	}

	// The item becomes an orphan while the Bundle is Ready and quiet, as when a
	// cleanup job finds something new: the pass that creates the Tombstone is
	// the last one for a while.
	t.Run("orphaned later", func(t *testing.T) {
		t.Parallel()
		e := newExternalItems(t)
		e.domain.Set("orphan", true)
		resources := []limbov1alpha1.Resource{e.resource("1h")}
		b := waitReady(t, createBundle(t, e.ns, "ext-later", resources...))
		e.domain.Set("orphan", false)
		replan(t, b, resources, "orphaned")
		waitListed(t, b, waitOneTombstone(t, e.ns, "orphan"))
	})

	// Later passes list it once, the same way: a Tombstone stands for an
	// external item; it is not itself an orphan object of the Bundle.
	t.Run("listed once", func(t *testing.T) {
		t.Parallel()
		e := newExternalItems(t)
		b, ts := e.orphan(t, "ext-once", "1h")
		waitListed(t, b, ts)
		replan(t, b, []limbov1alpha1.Resource{e.resource("1h")}, "again")
		waitListed(t, b, ts)
		if list := tombstones(t, e.ns); len(list) != 1 || list[0].UID != ts.UID || len(list[0].OwnerReferences) != 1 {
			t.Errorf("the Tombstone changed: %+v", list)
		}
	})

	// Forced: the item goes, and so does the entry.
	t.Run("unlisted when gone", func(t *testing.T) {
		t.Parallel()
		e := newExternalItems(t)
		b, ts := e.orphan(t, "ext-unlisted", "1h")
		waitListed(t, b, ts)
		if err := env.Client.Delete(testenv.Context(t, testenv.DefaultTimeout), &ts); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, e.ns))
		noPendingDeletions(t, b)
	})
}
