package tombstone

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A due Tombstone's item is deleted only for the Bundle that owns it, read
// fresh: never while its namespace or Bundle is being deleted (the teardown
// cancels it), for a Bundle of its name made since, or once its plugin resource
// left the Bundle or changed plugin; it waits for the Bundle's pass or teardown.
// A read that fails deletes nothing and is retried (fail closed).
func TestReconcileDeletesOnlyForItsBundle(t *testing.T) {
	ctx := context.Background()
	failing := errors.New("injected: 500 Internal Server Error")
	failGet := func(of func(client.Object) bool) interceptor.Funcs {
		return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if of(obj) {
				return failing
			}
			return c.Get(ctx, key, obj, opts...)
		}}
	}
	deleting := func(h *harness, obj client.Object) { // deleted, held by a finalizer
		obj.SetFinalizers(append(obj.GetFinalizers(), "example.com/hold"))
		if err := h.client.Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if err := h.client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	bundleOf := func(h *harness) *limbov1alpha1.Bundle {
		var b limbov1alpha1.Bundle
		if err := h.client.Get(ctx, client.ObjectKey{Namespace: "team", Name: "shop"}, &b); err != nil {
			t.Fatal(err)
		}
		return &b
	}
	for _, tc := range []struct {
		name    string
		change  func(h *harness)
		reader  interceptor.Funcs
		wantErr bool
	}{
		{name: "its namespace is being deleted", change: func(h *harness) {
			var n corev1.Namespace
			if err := h.client.Get(ctx, client.ObjectKey{Name: "team"}, &n); err != nil {
				t.Fatal(err)
			}
			deleting(h, &n)
		}},
		{name: "its Bundle is being deleted", change: func(h *harness) { deleting(h, bundleOf(h)) }},
		{name: "its Bundle is gone", change: func(h *harness) {
			if err := h.client.Delete(ctx, bundleOf(h)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its Bundle was made again since", change: func(h *harness) {
			b := bundleOf(h)
			if err := h.client.Delete(ctx, b); err != nil {
				t.Fatal(err)
			}
			again := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop", UID: "bundle-uid-2"}, Spec: b.Spec}
			if err := h.client.Create(ctx, again); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its resource left the Bundle", change: func(h *harness) {
			b := bundleOf(h)
			b.Spec.Resources[0].Name = "other-items"
			if err := h.client.Update(ctx, b); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its resource has another plugin now", change: func(h *harness) {
			b := bundleOf(h)
			b.Spec.Resources[0].Plugin.Name = "other"
			if err := h.client.Update(ctx, b); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its namespace cannot be read", wantErr: true, reader: failGet(func(o client.Object) bool {
			return o.GetObjectKind().GroupVersionKind().Kind == "Namespace"
		})},
		{name: "its Bundle cannot be read", wantErr: true, reader: failGet(func(o client.Object) bool {
			_, ok := o.(*limbov1alpha1.Bundle)
			return ok
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			h.reconcile() // the countdown
			h.clock.Step(time.Minute)
			if tc.change != nil {
				tc.change(h)
			}
			h.r.Reader = interceptor.NewClient(h.client.(client.WithWatch), tc.reader)
			res, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: h.key})
			switch {
			case tc.wantErr && !errors.Is(err, failing):
				t.Errorf("err = %v, want the failed read", err)
			case !tc.wantErr && (err != nil || res.RequeueAfter != recheckInterval):
				t.Errorf("Reconcile = %+v, %v; want to look again after %v", res, err, recheckInterval)
			}
			if n := h.plugin.calls.Load(); n != 0 {
				t.Errorf("the item was deleted %d times, want never", n)
			}
			if ts := h.tombstone(); ts == nil || !controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete) {
				t.Errorf("Tombstone %+v, want it kept", ts)
			}
		})
	}
}

// A delete is decided again on a fresh read of the Tombstone, never on the
// cache's copy alone: a cancel (finalizer gone) or a raised delay that the
// cache has not seen yet wins; so does a cancel that lands after the fresh read
// and before the attempt marker (its write is guarded by the resourceVersion).
func TestReconcileDecidesOnTheFreshTombstone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// stored changes what the API server holds; seen is the cache's copy.
		stored, seen func(*limbov1alpha1.Tombstone)
		// afterFreshRead changes what the API server holds just after the fresh read.
		afterFreshRead func(*limbov1alpha1.Tombstone)
	}{
		{name: "cancelled, the cache behind",
			stored: func(ts *limbov1alpha1.Tombstone) { ts.Finalizers = nil },
			seen:   func(ts *limbov1alpha1.Tombstone) { ts.Finalizers = []string{limbov1alpha1.FinalizerHardDelete} }},
		{name: "its delay raised, the cache behind",
			stored: func(ts *limbov1alpha1.Tombstone) { ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "1h" },
			seen:   func(ts *limbov1alpha1.Tombstone) { ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "1m" }},
		{name: "cancelled just after the fresh read",
			afterFreshRead: func(ts *limbov1alpha1.Tombstone) { ts.Finalizers = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			h.reconcile() // the countdown
			h.clock.Step(time.Minute)
			change := func(f func(*limbov1alpha1.Tombstone)) {
				ts := h.tombstone()
				f(ts)
				if err := h.client.Update(ctx, ts); err != nil {
					t.Fatal(err)
				}
			}
			if tc.stored != nil {
				change(tc.stored)
			}
			if tc.seen != nil {
				h.r.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					err := c.Get(ctx, key, obj, opts...)
					if ts, ok := obj.(*limbov1alpha1.Tombstone); ok && err == nil {
						tc.seen(ts)
					}
					return err
				}})
			}
			if tc.afterFreshRead != nil {
				changed := false
				h.r.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					err := c.Get(ctx, key, obj, opts...)
					if _, ok := obj.(*limbov1alpha1.Tombstone); ok && err == nil && !changed {
						changed = true
						change(tc.afterFreshRead)
					}
					return err
				}})
			}
			if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
				t.Fatal(err)
			}
			if n := h.plugin.calls.Load(); n != 0 {
				t.Errorf("the item was deleted %d times, want never", n)
			}
		})
	}
}

// A Tombstone with an invalid delay is never deleted, however long it waits.
func TestReconcileInvalidDelayNeverDeletes(t *testing.T) {
	h := newHarness(t, 0)
	ts := h.tombstone()
	ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "soon"
	if err := h.client.Update(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(24 * time.Hour)
	h.reconcile()
	if n := h.plugin.calls.Load(); n != 0 {
		t.Errorf("the item was deleted %d times, want never", n)
	}
	if e := h.event(); !strings.Contains(e, limbov1alpha1.ReasonInvalidDeletionDelay) {
		t.Errorf("event %q, want %s", e, limbov1alpha1.ReasonInvalidDeletionDelay)
	}
}

// The controller's memory of an item it deleted is of that Tombstone (its UID):
// a Tombstone of the same name made since counts down and deletes its item.
func TestReconcileDoneIsOfOneTombstone(t *testing.T) {
	h := newHarness(t, 0)
	h.r.done.Store(h.key, types.UID("a-predecessor"))
	if res := h.reconcile(); res.RequeueAfter != time.Minute {
		t.Errorf("Reconcile = %+v, want the countdown", res)
	}
	if ts := h.tombstone(); ts == nil || !controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete) {
		t.Fatalf("Tombstone %+v, want it kept: its item would never be deleted", ts)
	}
}

// A delete that finished in the background is recorded only on its own
// Tombstone: one of the same name made meanwhile, which a stale cache still
// shows as the old one, keeps its finalizer and its item is deleted in turn.
func TestReconcileFinishedDeleteOfAPredecessor(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 0)
	h.plugin.gate = make(chan struct{})
	h.r.deletes.wait = 10 * time.Millisecond
	// The cache, once stale is set, shows that Tombstone instead of the
	// API server's (set before the delete starts: its goroutine reads the client).
	var stale atomic.Pointer[limbov1alpha1.Tombstone]
	h.r.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if ts, ok := obj.(*limbov1alpha1.Tombstone); ok && stale.Load() != nil {
			stale.Load().DeepCopyInto(ts)
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	h.reconcile() // the delete starts, and hangs
	old := h.tombstone()
	// Cancelled and made again (the same item, judged again) while it runs.
	if err := softdelete.RemoveTombstone(ctx, h.client, old.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	again := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: old.Namespace, Name: old.Name, UID: "tombstone-uid-2",
		Labels: old.Labels, Annotations: old.Annotations, Finalizers: []string{limbov1alpha1.FinalizerHardDelete},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "shop", UID: "bundle-uid", Controller: ptr.To(true)}}},
		Spec: old.Spec}
	if err := h.client.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	stale.Store(old) // the cache has not seen the new one yet
	for h.event() != "" {
	}
	close(h.plugin.gate)
	triggered(t, h.done)
	if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Fatal(err)
	}
	if ts := h.tombstone(); ts == nil || ts.UID != "tombstone-uid-2" || !controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete) {
		t.Errorf("the new Tombstone: %+v, want it kept with its finalizer", ts)
	}
	// The predecessor's delete is recorded as its own: the item is gone.
	if got, want := h.event(), `Warning Deleted Thing "42" deleted: its deletion was cancelled while the delete ran, too late to call it back`; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
}

// An attempt marker that cannot be written (the API server fails, the
// Tombstone is gone) deletes nothing: the marker is what a cancel landing
// first turns into a Conflict. The turn it reserved goes back: the next
// reconcile deletes the item, not one that finds every turn of the resource
// taken by a delete that never ran.
func TestReconcileAttemptMarkerFails(t *testing.T) {
	ctx := context.Background()
	failing := errors.New("injected: 500 Internal Server Error")
	var failMarker atomic.Bool
	h := newHarnessIntercepted(t, 0, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if failMarker.Swap(false) {
			return failing
		}
		return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
	}})
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	failMarker.Store(true)
	if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: h.key}); !errors.Is(err, failing) {
		t.Errorf("Reconcile: %v, want the failed write", err)
	}
	if n := h.plugin.calls.Load(); n != 0 {
		t.Fatalf("the item was deleted %d times without its attempt marker, want never", n)
	}
	if res := h.reconcile(); res != (ctrl.Result{}) || h.plugin.calls.Load() != 1 || h.tombstone() != nil {
		t.Errorf("the next reconcile: %+v, %d deletes, Tombstone %+v; want the item deleted, the Tombstone gone", res, h.plugin.calls.Load(), h.tombstone())
	}
}

// A failed delete whose status write fails still waits its backoff: the
// reconcile returns the requeue, not the error, which controller-runtime
// would retry within milliseconds (dropping the requeue), sending the delete
// again at once.
func TestReconcileFailureRecordFails(t *testing.T) {
	var h *harness
	h = newHarnessIntercepted(t, 1, interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if h.plugin.calls.Load() > 0 { // the writes before the delete pass; the failure's record does not
			return errors.New("injected: 500 Internal Server Error")
		}
		return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
	}})
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
	if err != nil || res != (ctrl.Result{RequeueAfter: retryBackoff(1)}) || h.plugin.calls.Load() != 1 {
		t.Errorf("Reconcile = %+v, %v after %d deletes; want the backoff's requeue (%v), no error, one delete", res, err, h.plugin.calls.Load(), retryBackoff(1))
	}
}
