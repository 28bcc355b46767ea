package tombstone

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// triggered waits (up to a deadline) for the next Tombstone sent on done and
// returns its name.
func triggered(t *testing.T, done <-chan event.GenericEvent) string {
	t.Helper()
	select {
	case e := <-done:
		return e.Object.GetName()
	case <-time.After(10 * time.Second):
		t.Fatal("no Tombstone was triggered")
		return ""
	}
}

// noTrigger fails when a Tombstone was sent on done.
func noTrigger(t *testing.T, done <-chan event.GenericEvent) {
	t.Helper()
	select {
	case e := <-done:
		t.Fatalf("Tombstone %s was triggered", e.Object.GetName())
	default:
	}
}

func testTombstone(name, bundle, resource string) *limbov1alpha1.Tombstone {
	return &limbov1alpha1.Tombstone{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{limbov1alpha1.LabelBundle: bundle}},
		Spec:       limbov1alpha1.TombstoneSpec{Resource: resource},
	}
}

// A delete that outlasts the wait goes on in the background: the worker is
// told it did not finish, a reconcile meanwhile finds it running, its end
// triggers the Tombstone, and the reconcile after that is handed its outcome,
// once.
func TestExternalDeletesOutlastTheWait(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	d := newExternalDeletes(done, 1)
	d.wait = 10 * time.Millisecond
	ts := testTombstone("a", "shop", "items")
	gate := make(chan struct{})

	if !d.reserve(ts) {
		t.Fatal("no turn for the first delete")
	}
	finished, err := d.start(context.Background(), ts, 3, func(ctx context.Context) error {
		<-gate
		return context.Canceled
	})
	if finished || err != nil {
		t.Fatalf("start = (%v, %v), want an unfinished delete", finished, err)
	}
	if _, running, ok := d.pending(ts); !ok || !running {
		t.Fatalf("pending = (running %v, ok %v), want a running delete", running, ok)
	}
	noTrigger(t, done)

	close(gate)
	if name := triggered(t, done); name != "a" {
		t.Fatalf("triggered %s, want a", name)
	}
	call, running, ok := d.pending(ts)
	if !ok || running || call.attempt != 3 || call.err != context.Canceled {
		t.Fatalf("pending = (%+v, running %v, ok %v), want attempt 3 finished with its error", call, running, ok)
	}
	if _, _, ok := d.pending(ts); ok {
		t.Error("the finished delete was handed over twice")
	}
	if !d.reserve(ts) {
		t.Error("the turn was not given back")
	}
}

// A delete that ends as the wait runs out — after the timer fired, before the
// worker takes the lock — is handed to the worker as finished: its end found
// nobody waiting for a trigger, and the Tombstone waited for the resync (30
// minutes; never with --resync-period=0s), its backoff lost.
func TestExternalDeleteEndingAsTheWaitRunsOut(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	d := newExternalDeletes(done, 1)
	d.await = func(_ context.Context, finished <-chan struct{}, _ time.Duration) bool {
		<-finished // the timer fired as the delete ended
		return false
	}
	ts := testTombstone("a", "shop", "items")
	if !d.reserve(ts) {
		t.Fatal("no turn")
	}
	failure := errors.New("backend says no")
	finished, err := d.start(context.Background(), ts, 1, func(context.Context) error { return failure })
	if !finished || err != failure {
		t.Fatalf("start = (%v, %v), want the delete finished with its error", finished, err)
	}
	if _, _, ok := d.pending(ts); ok {
		t.Error("the finished delete is still pending")
	}
	noTrigger(t, done)
}

// A delete outlives the pass that started it but not the manager: it runs under
// the pass's context, which controller-runtime cancels only when the manager
// stops; the turn is given back.
func TestExternalDeleteEndsWithTheManager(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	d := newExternalDeletes(done, 1)
	d.wait = time.Millisecond
	ts := testTombstone("a", "shop", "items")
	managerCtx, stopManager := context.WithCancel(context.Background())
	if !d.reserve(ts) {
		t.Fatal("no turn")
	}
	if finished, _ := d.start(managerCtx, ts, 1, func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}); finished {
		t.Fatal("the delete finished before the manager stopped")
	}
	stopManager()
	if name := triggered(t, done); name != "a" {
		t.Fatalf("triggered %s, want a", name)
	}
	if call, running, ok := d.pending(ts); !ok || running || call.err != context.Canceled {
		t.Fatalf("pending = (%+v, running %v, ok %v), want the delete ended with context.Canceled", call, running, ok)
	}
	if !d.reserve(ts) {
		t.Error("the turn was not given back")
	}
}

// A fast delete is finished within the wait: nothing is left behind and
// nothing is triggered.
func TestExternalDeletesFastDelete(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	d := newExternalDeletes(done, 1)
	ts := testTombstone("a", "shop", "items")
	if !d.reserve(ts) {
		t.Fatal("no turn")
	}
	if finished, err := d.start(context.Background(), ts, 1, func(context.Context) error { return nil }); !finished || err != nil {
		t.Fatalf("start = (%v, %v), want finished without error", finished, err)
	}
	if _, _, ok := d.pending(ts); ok {
		t.Error("a delete the worker saw finish is pending")
	}
	noTrigger(t, done)
}

// A plugin resource has perResource turns; a Tombstone that finds none queues.
// A freed turn wakes the first queued (one, not all: a hundred waiting items of
// one backend would otherwise all read their Tombstone and Bundle again at
// every turn), and a woken Tombstone that does not take the turn passes it on.
// Other resources (another Bundle's, or another resource of the same Bundle)
// have their own turns.
func TestExternalDeletesTurnsPerResource(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	d := newExternalDeletes(done, 2)
	ts := map[string]*limbov1alpha1.Tombstone{}
	for _, name := range []string{"a", "b", "c", "d"} {
		ts[name] = testTombstone(name, "shop", "items")
	}
	for _, name := range []string{"a", "b"} {
		if !d.reserve(ts[name]) {
			t.Fatalf("no turn for %s", name)
		}
	}
	for _, name := range []string{"c", "d", "c"} {
		if d.reserve(ts[name]) {
			t.Fatalf("%s got a turn of a resource whose two are taken", name)
		}
	}
	for _, other := range []*limbov1alpha1.Tombstone{testTombstone("x", "blog", "items"), testTombstone("y", "shop", "routes")} {
		if !d.reserve(other) {
			t.Errorf("%s (resource %s of %s) found its turns taken by another resource", other.Name, other.Spec.Resource, other.Labels[limbov1alpha1.LabelBundle])
		}
	}
	noTrigger(t, done)

	d.release(ts["a"])
	if name := triggered(t, done); name != "c" {
		t.Fatalf("woke %s, want c, the first queued", name)
	}
	noTrigger(t, done)
	d.reconciled(types.NamespacedName{Namespace: "team", Name: "c"}) // c did not take it
	if name := triggered(t, done); name != "d" {
		t.Fatalf("c passed the turn to %s, want d", name)
	}
	if !d.reserve(ts["d"]) {
		t.Fatal("no turn for d once one freed")
	}
	d.reconciled(types.NamespacedName{Namespace: "team", Name: "d"})
	noTrigger(t, done) // d took it: nothing to pass on, and c is no longer queued
	d.release(ts["b"])
	noTrigger(t, done)
}

// The outcome of a predecessor's delete (a Tombstone of the same name, gone and
// re-created) is handed over as the predecessor's (its UID), never recorded as
// the successor's, and a forgotten Tombstone's finished delete is handed over
// once, then dropped.
func TestExternalDeletesPredecessorAndForget(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	d := newExternalDeletes(done, 1)
	d.wait = 0
	old := testTombstone("a", "shop", "items")
	// finishInBackground runs a delete of old that ends after the worker stopped
	// waiting for it.
	finishInBackground := func() {
		t.Helper()
		gate := make(chan struct{})
		if !d.reserve(old) {
			t.Fatal("no turn")
		}
		if finished, err := d.start(context.Background(), old, 1, func(context.Context) error { <-gate; return nil }); finished || err != nil {
			t.Fatalf("start = (%v, %v), want an unfinished delete", finished, err)
		}
		close(gate)
		triggered(t, done)
	}
	finishInBackground()
	successor := old.DeepCopy()
	successor.UID = "successor"
	if call, _, ok := d.pending(successor); !ok || call.uid != old.UID {
		t.Fatalf("the successor's name was handed %+v (ok %v), want the predecessor's delete", call, ok)
	}
	if call, _, ok := d.pending(successor); ok {
		t.Fatalf("the predecessor's delete was handed over twice: %+v", call)
	}

	finishInBackground()
	if call := d.forget(types.NamespacedName{Namespace: old.Namespace, Name: old.Name}); call == nil || call.uid != old.UID {
		t.Errorf("forget handed over %+v, want the finished delete", call)
	}
	if _, _, ok := d.pending(old); ok {
		t.Error("a forgotten Tombstone's delete is still pending")
	}
}

// A Tombstone whose delete hangs does not hold its worker: the reconcile that
// starts it returns after the wait with the attempt counted; one that comes
// while it runs starts no other; when it ends the Tombstone is triggered, and
// the next reconcile records the deletion and removes the Tombstone. Each
// reconcile while it runs requeues after plugin.CallTimeout, the delete's
// bound, in case its trigger is dropped.
func TestReconcileHangingDelete(t *testing.T) {
	h := newHarness(t, 0)
	h.plugin.gate = make(chan struct{})
	h.r.deletes.wait = 10 * time.Millisecond
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)

	for i := range 2 {
		if res := h.reconcile(); res != (ctrl.Result{RequeueAfter: plugin.CallTimeout}) {
			t.Fatalf("reconcile %d while the delete hangs: %+v, want the safety net's requeue after %v (its end triggers the Tombstone)", i+1, res, plugin.CallTimeout)
		}
		ts := h.tombstone()
		if ts == nil || !controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete) || ts.Status.Attempts != 1 {
			t.Fatalf("reconcile %d while the delete hangs: Tombstone %+v, want it kept with attempts 1", i+1, ts)
		}
	}
	if n := h.plugin.calls.Load(); n != 1 {
		t.Fatalf("%d delete calls, want 1", n)
	}

	close(h.plugin.gate)
	if name := triggered(t, h.done); name != h.key.Name {
		t.Fatalf("triggered %s, want %s", name, h.key.Name)
	}
	if res := h.reconcile(); res != (ctrl.Result{}) {
		t.Errorf("recording the deletion: %+v", res)
	}
	if ts := h.tombstone(); ts != nil {
		t.Errorf("the Tombstone is still there after its item was deleted (finalizers %v)", ts.Finalizers)
	}
	if got := h.sample("limbo_deletions_total", softdelete.ResultDeleted).GetCounter().GetValue(); got != 1 {
		t.Errorf(`limbo_deletions_total{result="deleted"} = %v, want 1`, got)
	}
	if n := h.plugin.calls.Load(); n != 1 {
		t.Errorf("%d delete calls, want 1", n)
	}
	// The reconcile of the Tombstone gone forgets it.
	h.reconcile()
	h.r.done.Range(func(key, uid any) bool {
		t.Errorf("the Tombstone is gone, but the controller still remembers deleting its item (%v: %v)", key, uid)
		return true
	})
}

// A delete whose plugin panics, within the wait or in the background, ends
// with the panic as its error (retried like any), gives its turn back, and
// the process goes on.
func TestExternalDeletePanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		del  func(context.Context) error
		want string
	}{
		{"within the wait", time.Minute, func(context.Context) error {
			n := -1
			return fmt.Errorf("%d", len(make([]string, n)))
		}, "makeslice: len out of range"},
		{"in the background", time.Millisecond, func(context.Context) error {
			time.Sleep(50 * time.Millisecond)
			panic("boom")
		}, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan event.GenericEvent, 4)
			d := newExternalDeletes(done, 1)
			d.wait = tc.wait
			ts := testTombstone("a", "shop", "items")
			if !d.reserve(ts) {
				t.Fatal("no turn")
			}
			finished, err := d.start(context.Background(), ts, 1, tc.del)
			if !finished {
				if name := triggered(t, done); name != "a" {
					t.Fatalf("triggered %s, want a", name)
				}
				call, running, ok := d.pending(ts)
				if !ok || running {
					t.Fatalf("pending = (%+v, running %v, ok %v), want the delete finished", call, running, ok)
				}
				err = call.err
			}
			var perr *plugin.PanicError
			if !errors.As(err, &perr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the delete's error %v, want the panic, naming %q", err, tc.want)
			}
			if !d.reserve(ts) {
				t.Error("the turn was not given back")
			}
		})
	}
}

// Reconcile takes a turn of the plugin resource before it deletes: a due
// Tombstone of a resource whose only turn a hanging delete holds starts no
// delete, and waits to be woken (the requeue is the safety net).
func TestReconcileWaitsForATurn(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 0)
	secondKey := h.secondDueBehindAHangingDelete(t)
	res, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: secondKey})
	if err != nil || res.RequeueAfter != plugin.CallTimeout || h.plugin.calls.Load() != 1 {
		t.Errorf("the second Tombstone: %+v, %v, %d deletes; want no delete, a requeue after %v", res, err, h.plugin.calls.Load(), plugin.CallTimeout)
	}
	close(h.plugin.gate)
	// The first delete's end triggers it; the turn it frees wakes the second.
	woken := map[string]bool{triggered(t, h.done): true, triggered(t, h.done): true}
	if !woken[h.key.Name] || !woken[secondKey.Name] {
		t.Errorf("triggered %v, want both Tombstones", woken)
	}
}

// secondDueBehindAHangingDelete makes a second Tombstone of h's plugin
// resource (item 43), lets both countdowns end, and starts the first's delete,
// which hangs on h.plugin.gate and holds the resource's only turn; the second's
// key.
func (h *harness) secondDueBehindAHangingDelete(t *testing.T) client.ObjectKey {
	t.Helper()
	ctx := context.Background()
	h.plugin.gate = make(chan struct{})
	h.r.deletes.wait = 10 * time.Millisecond
	second := h.tombstone()
	second.Name, second.UID, second.ResourceVersion = "shop-items-43", "tombstone-uid-43", ""
	second.Spec.Item.ID = "43"
	if err := h.client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	secondKey := client.ObjectKeyFromObject(second)
	for _, key := range []client.ObjectKey{h.key, secondKey} { // the countdowns
		if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Step(time.Minute)
	h.reconcile() // the first delete starts, and hangs
	return secondKey
}

// A delete already sent when its Tombstone is cancelled cannot be called back:
// the item is gone all the same, and the audit trail says so rather than only
// "cancelled" — an event on the Tombstone, the deletion counted. A delete of a
// cancelled Tombstone that failed deleted nothing: nothing more is said.
func TestReconcileDeleteFinishingAfterItsCancel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int
		wantEvent string
		wantCount float64
	}{
		{name: "the delete succeeds", wantEvent: `Warning Deleted Thing "42" deleted: its deletion was cancelled while the delete ran, too late to call it back`, wantCount: 1},
		{name: "the delete fails", failures: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, tc.failures)
			h.plugin.gate = make(chan struct{})
			h.r.deletes.wait = 10 * time.Millisecond
			h.reconcile() // the countdown
			h.clock.Step(time.Minute)
			h.reconcile() // the delete starts, and hangs
			for h.event() != "" {
			}
			// Cancelled (its item declared again) while the delete runs.
			if err := softdelete.RemoveTombstone(ctx, h.client, h.tombstone()); err != nil {
				t.Fatal(err)
			}
			close(h.plugin.gate)
			triggered(t, h.done)
			h.reconcile()
			if got := h.event(); got != tc.wantEvent {
				t.Errorf("event %q, want %q", got, tc.wantEvent)
			}
			if got := h.sample("limbo_deletions_total", softdelete.ResultDeleted).GetCounter().GetValue(); got != tc.wantCount {
				t.Errorf(`limbo_deletions_total{result="deleted"} = %v, want %v`, got, tc.wantCount)
			}
			h.reconcile()
			if got := h.event(); got != "" {
				t.Errorf("a second reconcile recorded %q again", got)
			}
		})
	}
}
