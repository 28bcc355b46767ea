package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphan held by a finalizer (a PVC's pvc-protection, here a test finalizer)
// is deleted once: one Deleted event, one count in limbo_deletions_total, and it
// stays in pendingDeletions, saying what holds it, until it is really gone.
// Not parallel: it expects an exact increment of a process-wide counter.
func TestTerminatingOrphanIsDeletedOnce(t *testing.T) {
	ns := env.Namespace(t)
	const finalizer = "test.limbo.dev/hold"
	held := configMap("held", map[string]any{"k": "v"}, nil)
	held["metadata"].(map[string]any)["finalizers"] = []any{finalizer}
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "shop", keep, objectResource(t, "held", held))
	waitReady(t, b)
	t.Cleanup(func() { // never leave the finalizer behind, whatever failed
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(configMapGVK)
		u.SetNamespace(ns)
		u.SetName("held")
		_ = env.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})

	waitEarlierTestsGone(t)
	before := gatherEngineMetrics(t).deleted
	updateBundle(t, b, keep)
	const msg = "being deleted; held by finalizers: " + finalizer
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "held" || cur.Status.PendingDeletions[0].Message != msg {
			return fmt.Errorf("pendingDeletions = %+v, want held with %q", cur.Status.PendingDeletions, msg)
		}
		return nil
	})
	// More passes while it is held: each label is an event on a managed object.
	for i := range 3 {
		addLabel(t, configMapGVK, ns, "keep", "test.limbo.dev/poke", fmt.Sprint(i))
	}
	deletedOnce := func() error {
		if n := countEvents(t, b, corev1.EventTypeNormal, "Deleted"); n != 1 {
			return fmt.Errorf("%d Deleted events, want 1", n)
		}
		if got := gatherEngineMetrics(t).deleted - before; got != 1 {
			return fmt.Errorf("limbo_deletions_total{result=deleted} grew by %v, want 1", got)
		}
		return nil
	}
	testenv.Eventually(t, testenv.DefaultTimeout, deletedOnce) // events are recorded asynchronously
	testenv.Consistently(t, 3*time.Second, deletedOnce)

	patchObject(t, configMapGVK, ns, "held", `{"metadata":{"finalizers":null}}`)
	testenv.Eventually(t, testenv.DefaultTimeout, noObject(configMapGVK, ns, "held"))
	noPendingDeletions(t, b)
}

// countEvents counts b's events of a type and reason (a repeated event counts
// as often as it was emitted).
func countEvents(t testing.TB, b *limbov1alpha1.Bundle, typ, reason string) int {
	t.Helper()
	n := 0
	for _, e := range events(t, b) {
		if e.Type == typ && e.Reason == reason {
			n += max(int(e.Count), 1)
		}
	}
	return n
}
