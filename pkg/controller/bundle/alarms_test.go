package bundle

import (
	"context"
	"errors"
	"testing"
	"time"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// An alarm wakes its Bundle once; a later alarm of the Bundle replaces the
// earlier one; a cleared alarm does not ring.
func TestAlarms(t *testing.T) {
	wake := make(chan event.GenericEvent, 4)
	a := newAlarms(wake)
	shop, cafe := types.NamespacedName{Namespace: "ns", Name: "shop"}, types.NamespacedName{Namespace: "ns", Name: "cafe"}

	a.set(shop, time.Hour)
	a.set(shop, 10*time.Millisecond) // replaces the hour
	a.set(cafe, time.Hour)
	a.clear(cafe)
	select {
	case e := <-wake:
		if got := (types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}); got != shop {
			t.Fatalf("woke %v, want %v", got, shop)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the alarm did not ring")
	}
	// Nothing else rings: the hour was replaced, cafe's was cleared.
	a.mu.Lock()
	left := len(a.timers)
	a.mu.Unlock()
	if left != 0 {
		t.Errorf("%d alarms left, want none", left)
	}
	select {
	case e := <-wake:
		t.Errorf("woke %s/%s again", e.Object.GetNamespace(), e.Object.GetName())
	case <-time.After(50 * time.Millisecond):
	}
}

// A countdown that ends now (a 0s delay just stamped) is a deadline like any
// other: a pass that also fails on something else keeps it for the alarm, not
// for the work queue's backoff (up to 30 s).
func TestZeroDelayDeadlineSurvivesAFailedPass(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &pass{r: &Reconciler{Clock: clk}}
	p.collect(nil, clk.Now(), false, nil) // Engine.Orphan of a 0s-delay orphan just stamped
	p.fail(errors.New("delete ConfigMap ns/stuck: refused"))
	if res := p.failedResult(); res.RequeueAfter == 0 {
		t.Errorf("failedResult = %+v: the stamped orphan's deadline (now) is lost to the backoff", res)
	}
}

// A pass comes back at an orphan's deadline, however long the other orphans of
// the pass took after it was decided.
func TestRequeueAtTheDeadlineNotAfterThePass(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &pass{r: &Reconciler{Clock: clk}}
	deadline := clk.Now().Add(10 * time.Second) // decided now: Wait until then
	clk.Step(5 * time.Second)                   // the other orphans of the pass (stamps, fresh reads, deletes)
	p.collect(nil, deadline, false, nil)
	if got := clk.Now().Add(p.result().RequeueAfter); got.After(deadline) {
		t.Errorf("requeued at %v, after the deadline %v", got, deadline)
	}
}

// A pass whose status write fails keeps its deadlines for the alarm: an orphan
// it stamped is deleted on time, not when the work queue's backoff (up to
// 30 s) brings the Bundle back. Before, the failed write returned no requeue,
// and Reconcile cleared even the alarm an earlier pass had set.
func TestStatusWriteFailureKeepsTheAlarm(t *testing.T) {
	b := livingBundle(cmResource(t, "keep", nil))
	f := newTeardownFixture(t, b, nil, bundleConfigMap("keep", nil), bundleConfigMap("x", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	wake := make(chan event.GenericEvent, 4)
	f.r.alarms = newAlarms(wake)
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	}})
	key := client.ObjectKeyFromObject(b)
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err == nil {
		t.Fatal("Reconcile succeeded; want the status write's error")
	}
	if cm := f.liveConfigMap(t, "x"); cm == nil || cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
		t.Fatalf("x was not stamped: %+v", cm)
	}
	f.r.alarms.mu.Lock()
	timer := f.r.alarms.timers[key]
	f.r.alarms.mu.Unlock()
	if timer == nil {
		t.Error("no alarm for x's deadline: it waits for the work queue's backoff")
	}
	f.r.alarms.clear(key)
}
