package tombstone

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/uninstall"
)

// `kubectl delete tombstone` forces the delete: the item goes at once, before
// its deadline, and no countdown ended (no lateness is recorded). A forced
// delete that fails backs off as any. A Tombstone deleted while its Bundle is
// gone is cancelled instead: removing a cleanup job stops its deletions, the
// item stays. So is one deleted because limbo's CRDs are (an uninstall), its
// Bundle not deleted yet.
func TestReconcileForcedTombstone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		failures     int
		bundleGone   bool
		uninstalled  bool
		wantCalls    int32
		wantGone     bool
		wantRequeue  time.Duration
		wantLateness bool
	}{
		{name: "deleted at once", wantCalls: 1, wantGone: true},
		{name: "its delete fails: backs off", failures: 1, wantCalls: 1, wantRequeue: baseBackoff},
		{name: "its Bundle is gone: cancelled, the item stays", bundleGone: true, wantCalls: 0, wantGone: true},
		{name: "limbo uninstalled, its Bundle not deleted yet: cancelled, the item stays", uninstalled: true, wantCalls: 0, wantGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.failures)
			if res := h.reconcile(); res.RequeueAfter != time.Minute { // the countdown
				t.Fatalf("the countdown: %+v", res)
			}
			if tc.bundleGone {
				if err := h.client.Delete(ctx, &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"}}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.uninstalled {
				// The CRD's own finalizer holds it while the API server deletes
				// its objects.
				crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: uninstall.TombstonesCRD, Finalizers: []string{"customresourcecleanup.apiextensions.k8s.io"}}}
				if err := h.client.Create(ctx, crd); err != nil {
					t.Fatal(err)
				}
				if err := h.client.Delete(ctx, crd); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.client.Delete(ctx, h.tombstone()); err != nil { // its finalizer holds it
				t.Fatal(err)
			}
			if tc.failures > 0 {
				// The fake API server stamps the deletion with the real clock: the
				// attempts come after it, as they do in a cluster.
				h.clock.SetTime(h.tombstone().DeletionTimestamp.Add(time.Second))
			}
			res := h.reconcile()
			if n := h.plugin.calls.Load(); n != tc.wantCalls {
				t.Errorf("the item was deleted %d times, want %d", n, tc.wantCalls)
			}
			if gone := h.tombstone() == nil; gone != tc.wantGone {
				t.Errorf("the Tombstone gone = %v, want %v", gone, tc.wantGone)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("Reconcile = %+v, want a requeue after %v", res, tc.wantRequeue)
			}
			if n := h.sample("limbo_deletion_lateness_seconds", "").GetHistogram().GetSampleCount(); n != 0 {
				t.Errorf("lateness recorded %d times, want none: no countdown ended", n)
			}
			if tc.failures == 0 {
				return
			}
			// The next trigger within the backoff does not try again.
			if res := h.reconcile(); h.plugin.calls.Load() != 1 || res.RequeueAfter != baseBackoff {
				t.Errorf("within the backoff: %d deletes, %+v; want 1, a requeue after %v", h.plugin.calls.Load(), res, baseBackoff)
			}
			if e := h.event(); !strings.Contains(e, limbov1alpha1.EventDeleteFailed) {
				t.Errorf("event %q, want %s", e, limbov1alpha1.EventDeleteFailed)
			}
		})
	}
}
