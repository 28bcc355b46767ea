package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Tombstone the user deleted (its external delete failing) whose plugin
// resource then leaves the Bundle does not stay Terminating forever: removing a
// cleanup job stops its deletions; the Tombstone goes, the item stays.
func TestTombstoneForcedThenResourceRemoved(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	e.domain.FailDeletes(testplugin.ErrInjected)
	keep := objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil))
	b, ts := e.orphan(t, "shop", "1h", keep)
	if err := env.Client.Delete(context.Background(), &ts); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Deletes("orphan") == 0 {
			return fmt.Errorf("the forced delete was not attempted")
		}
		return nil
	})

	updateBundle(t, b, keep)
	// Once a pass has seen the resource gone, every attempt reads the Bundle
	// without it (the fence); one that read it before has long sent its
	// failing delete. Deletes go through from now on: an item still there at
	// the end was kept, not spared by a failing backend.
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("generation %d not observed yet (%d)", cur.Generation, cur.Status.ObservedGeneration)
		}
		return nil
	})
	sent := e.domain.Deletes("orphan")
	e.domain.FailDeletes(nil)
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, e.ns))
	if n := e.domain.Deletes("orphan"); n != sent || !e.domain.Exists("orphan") {
		t.Errorf("the item exists=%v after %d delete calls since its resource left the Bundle, want true after none", e.domain.Exists("orphan"), n-sent)
	}
}

// Two Bundles of a namespace with a plugin resource of the same name that find
// the same item each get their own Tombstone.
func TestTombstoneNamesIncludeTheBundle(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	shop := createBundle(t, e.ns, "shop", e.resource("1h"))
	cart := createBundle(t, e.ns, "cart", e.resource("1h"))
	for _, b := range []*limbov1alpha1.Bundle{shop, cart} {
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Kind != "Tombstone" {
				return fmt.Errorf("pendingDeletions = %+v, want its Tombstone", cur.Status.PendingDeletions)
			}
			return nil
		})
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		owners := map[string]bool{}
		for _, ts := range tombstones(t, e.ns) {
			owners[ts.Labels[limbov1alpha1.LabelBundle]] = true
			if ref := metav1.GetControllerOf(&ts); ref == nil || ref.Name != ts.Labels[limbov1alpha1.LabelBundle] {
				return fmt.Errorf("Tombstone %s is labelled %q but controlled by %v", ts.Name, ts.Labels[limbov1alpha1.LabelBundle], ref)
			}
		}
		if !owners["shop"] || !owners["cart"] || len(owners) != 2 {
			return fmt.Errorf("Tombstones by Bundle: %v, want one each for shop and cart", owners)
		}
		return nil
	})
}

// An edit that removes a plugin resource and breaks the spec still cancels the
// resource's Tombstones: a broken spec never lets a removed cleanup job delete.
func TestTombstoneCancelledByAnEditThatBreaksTheSpec(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	b, _ := e.orphan(t, "shop", "1h")

	broken := objectResource(t, "broken", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "cluster-scoped"}})
	updateBundle(t, b, broken)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return conditionIs(cur, "Stalled", metav1.ConditionTrue, "InvalidSpec")
	})
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, e.ns))
	waitEventContaining(t, b, corev1.EventTypeNormal, "DeletionCancelled", `TestItem "orphan"`, `resource "items" left the Bundle`)
	testenv.Consistently(t, 2*time.Second, e.untouched("orphan"))
}

// A Tombstone whose stamp is unparsable is stamped again, with a Warning; the
// external deletions it makes count in limbo_deletions_total and the lateness
// histogram like the engine's own, once.
// Not parallel: it expects exact increments of process-wide counters, which
// other tests' deletions would add to.
func TestTombstoneRestampAndMetrics(t *testing.T) {
	waitEarlierTestsGone(t)
	e := newExternalItems(t)
	_, ts := e.orphan(t, "shop", "10s")
	before := gatherEngineMetrics(t)

	patch := []byte(`{"metadata":{"annotations":{"limbo.dev/deletionTimestamp":"yesterday"}}}`)
	if err := env.Client.Patch(context.Background(), &ts, client.RawPatch("application/merge-patch+json", patch)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if e.domain.Exists("orphan") {
			return fmt.Errorf("the item still exists")
		}
		return nil
	})
	// The deletion is counted once the plugin's delete has returned: the item
	// is gone a moment before.
	countedOnce := func() error {
		after := gatherEngineMetrics(t)
		if after.deleted-before.deleted != 1 {
			return fmt.Errorf("limbo_deletions_total{result=deleted} grew by %v, want 1", after.deleted-before.deleted)
		}
		if after.latenessCount-before.latenessCount != 1 {
			return fmt.Errorf("lateness observations grew by %d, want 1", after.latenessCount-before.latenessCount)
		}
		return nil
	}
	testenv.Eventually(t, testenv.DefaultTimeout, countedOnce)
	testenv.Consistently(t, 2*time.Second, countedOnce)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var list corev1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(e.ns)); err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == "Tombstone" && ev.Type == corev1.EventTypeWarning && ev.Reason == "InvalidDeletionTimestamp" {
				return nil
			}
		}
		return fmt.Errorf("no Warning InvalidDeletionTimestamp event on the Tombstone")
	})
}
