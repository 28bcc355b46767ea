package tombstone

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// freshReads counts the reads of h's reconciler from the API server, once
// counting is on: set up before any reconcile (a delete running beside the
// worker reads the Reader too).
type freshReads struct {
	counting atomic.Bool
	n        atomic.Int32
}

func countFreshReads(h *harness) *freshReads {
	reads := &freshReads{}
	h.r.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if reads.counting.Load() {
				reads.n.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	return reads
}

// A due Tombstone that will wait anyway — every turn of its backend taken, or
// its Bundle, as the cache shows it, not Ready — waits before its fresh reads
// (itself, two CRDs, its namespace, its whole Bundle): thousands of due route
// Tombstones queued behind one turn made them every 30 s each, and every 5 s
// while their Bundle was not Ready, hundreds of reads a second, the Tombstone
// workers busy with nothing else while other Bundles' deletions waited.
func TestDueTombstoneThatWaitsReadsNothingFresh(t *testing.T) {
	t.Run("every turn taken", func(t *testing.T) {
		ctx := context.Background()
		h := newHarness(t, 0)
		reads := countFreshReads(h)
		secondKey := h.secondDueBehindAHangingDelete(t)
		defer close(h.plugin.gate)
		reads.counting.Store(true)
		res, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: secondKey})
		if err != nil || res.RequeueAfter != plugin.CallTimeout || h.plugin.calls.Load() != 1 {
			t.Errorf("the second Tombstone: %+v, %v, %d deletes; want no delete, a requeue after %v", res, err, h.plugin.calls.Load(), plugin.CallTimeout)
		}
		if n := reads.n.Load(); n != 0 {
			t.Errorf("%d reads from the API server while no turn is free, want none", n)
		}
	})
	t.Run("its Bundle not Ready", func(t *testing.T) {
		ctx := context.Background()
		h := newHarness(t, 0)
		reads := countFreshReads(h)
		var b limbov1alpha1.Bundle
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: "team", Name: "shop"}, &b); err != nil {
			t.Fatal(err)
		}
		b.Generation = 1
		b.Status = limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "items", State: limbov1alpha1.ResourceInProgress}}}
		if err := h.client.Update(ctx, &b); err != nil { // the harness's Bundle has no status subresource
			t.Fatal(err)
		}
		h.reconcile() // the countdown
		h.clock.Step(2 * time.Minute)
		reads.counting.Store(true)
		res := h.reconcile()
		if h.plugin.calls.Load() != 0 || res.RequeueAfter <= 0 || res.RequeueAfter > recheckInterval {
			t.Errorf("Reconcile = %+v, %d deletes; want none, a recheck within %v", res, h.plugin.calls.Load(), recheckInterval)
		}
		if n := reads.n.Load(); n != 0 {
			t.Errorf("%d reads from the API server while the cache shows the Bundle not Ready, want none", n)
		}
	})
}
