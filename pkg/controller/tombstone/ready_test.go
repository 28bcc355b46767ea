package tombstone

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A due Tombstone waits while a resource of its Bundle is not Ready: a half
// rolled-out Bundle never deletes (DESIGN §3, step 6), external items no more
// than objects, whose countdowns the engine holds meanwhile. The Tombstone's
// item was deleted at its deadline whatever the Bundle's state. A forced one
// (kubectl delete tombstone) does not wait.
func TestDueTombstoneWaitsForItsBundleToBeReady(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    limbov1alpha1.BundleStatus
		forced    bool
		wantCalls int32
	}{
		{name: "every resource Ready: deleted",
			status:    limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "items", State: limbov1alpha1.ResourceReady}, {Name: "app", State: limbov1alpha1.ResourceReady}}},
			wantCalls: 1},
		{name: "a resource not Ready: waits",
			status: limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "items", State: limbov1alpha1.ResourceReady}, {Name: "app", State: limbov1alpha1.ResourceInProgress}}}},
		{name: "a spec no pass has seen yet: waits",
			status: limbov1alpha1.BundleStatus{ObservedGeneration: 0, Resources: []limbov1alpha1.ResourceStatus{{Name: "items", State: limbov1alpha1.ResourceReady}}}},
		{name: "a resource not Ready, the Tombstone forced: deleted",
			status: limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "items", State: limbov1alpha1.ResourceReady}, {Name: "app", State: limbov1alpha1.ResourceError}}},
			forced: true, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			ctx := context.Background()
			var b limbov1alpha1.Bundle
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: "team", Name: "shop"}, &b); err != nil {
				t.Fatal(err)
			}
			b.Generation, b.Status = 1, tc.status // the harness's Bundle has no status subresource
			if err := h.client.Update(ctx, &b); err != nil {
				t.Fatal(err)
			}
			h.reconcile() // the countdown
			if tc.forced {
				if err := h.client.Delete(ctx, h.tombstone()); err != nil {
					t.Fatal(err)
				}
				h.clock.SetTime(h.tombstone().DeletionTimestamp.Add(time.Second))
			} else {
				h.clock.Step(2 * time.Minute) // past its deadline
			}
			res := h.reconcile()
			if n := h.plugin.calls.Load(); n != tc.wantCalls {
				t.Errorf("the item was deleted %d times, want %d", n, tc.wantCalls)
			}
			if tc.wantCalls == 0 && (res.RequeueAfter <= 0 || res.RequeueAfter > recheckInterval) {
				t.Errorf("Reconcile = %+v, want a recheck within %v", res, recheckInterval)
			}
		})
	}
}
