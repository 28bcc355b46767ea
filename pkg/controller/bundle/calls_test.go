package bundle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// gatedPlugin plans when its gate lets it, counting the plans running at once.
type gatedPlugin struct {
	gate          chan struct{}
	running, most atomic.Int32
	message       atomic.Value
}

func (g *gatedPlugin) Describe() plugin.Description { return plugin.Description{Name: "gated"} }

func (g *gatedPlugin) Plan(ctx context.Context, _ plugin.Request) (*plugin.Result, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	if n > g.most.Load() {
		g.most.Store(n)
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &plugin.Result{Ready: true, Message: g.message.Load().(string)}, nil
}

// A slow call never holds a pass longer than the wait, and only the pass that
// started it waits: the pass goes on with the last known state, the call's end
// triggers the Bundle, the next pass takes it as current, and one call of a
// resource runs at a time.
func TestBackgroundCallsNeverHoldAPass(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	calls := newBackgroundCalls[*plugin.Result](done, nil)
	calls.wait = 50 * time.Millisecond
	g := &gatedPlugin{gate: make(chan struct{})}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	req := plugin.Request{Resource: "gc", Spec: []byte(`{}`)}
	ctx := context.Background()
	plan := func() callOutcome[*plugin.Result] {
		return calls.call(ctx, b, req.Resource, req.Spec, func(ctx context.Context, _ *limbov1alpha1.Bundle) (*plugin.Result, error) { return g.Plan(ctx, req) })
	}

	// A fast first call is current: one that ends within the wait (an hour
	// here, so that a goroutine scheduled late on a loaded machine is still
	// "fast").
	calls.wait = time.Hour
	g.message.Store("first")
	go func() { g.gate <- struct{}{} }()
	if out := plan(); !out.current || out.result.Message != "first" {
		t.Fatalf("fast call: %+v, want the current result", out)
	}
	if len(done) != 0 {
		t.Fatal("a call the pass waited for triggered the Bundle again")
	}

	// A slow one: the pass gets the last known state, not current.
	calls.wait = 50 * time.Millisecond
	g.message.Store("second")
	start := time.Now()
	out := plan()
	if out.current || !out.known || out.result == nil || out.result.Message != "first" {
		t.Fatalf("slow call: %+v, want the last known state", out)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the pass waited %v", waited)
	}
	// Another pass meanwhile starts no second call, and does not wait for the
	// running one (however long a wait is), so a hanging call holds no worker.
	calls.wait = time.Hour
	second := make(chan callOutcome[*plugin.Result], 1)
	go func() { second <- plan() }()
	select {
	case out := <-second:
		if out.current || out.result.Message != "first" {
			t.Fatalf("second pass: %+v, want the last known state", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a pass waited for a call an earlier pass started")
	}
	g.gate <- struct{}{}
	select {
	case e := <-done:
		if e.Object.GetName() != "shop" {
			t.Errorf("triggered %s, want shop", e.Object.GetName())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call's end did not trigger the Bundle")
	}
	if out := plan(); !out.current || out.result.Message != "second" {
		t.Fatalf("after the slow call: %+v, want it as current", out)
	}
	if most := g.most.Load(); most != 1 {
		t.Errorf("%d calls of one resource ran at once, want 1", most)
	}
}

// A call outlives the pass that started it but not the manager: it runs under the
// pass's context, which controller-runtime cancels only when the manager stops.
func TestBackgroundCallEndsWithTheManager(t *testing.T) {
	done := make(chan event.GenericEvent, 1)
	calls := newBackgroundCalls[*plugin.Result](done, nil)
	calls.wait = time.Millisecond
	managerCtx, stopManager := context.WithCancel(context.Background())
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	ended := make(chan error, 1)
	calls.call(managerCtx, b, "gc", []byte(`{}`), func(ctx context.Context, _ *limbov1alpha1.Bundle) (*plugin.Result, error) {
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	select {
	case err := <-ended:
		t.Fatalf("the call ended with its pass: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	stopManager()
	select {
	case err := <-ended:
		if err != context.Canceled {
			t.Errorf("the call ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call outlived the manager")
	}
}

// A call of the previous spec that finished in the background, and that no pass
// took before the spec changed, is never taken as the new spec's: a pass whose
// new call outlasts the wait gets it as the last known state, not as current
// (it would decide orphans from the plan of a spec the user just withdrew).
func TestBackgroundCallOfAnOldSpecIsNotCurrent(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	calls := newBackgroundCalls[*plugin.Result](done, nil)
	calls.wait = 50 * time.Millisecond
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	gateA, gateB := make(chan struct{}), make(chan struct{})
	plan := func(spec string, gate chan struct{}) callOutcome[*plugin.Result] {
		return calls.call(context.Background(), b, "gc", []byte(spec), func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
			<-gate
			return &plugin.Result{Message: "plan of " + spec}, nil
		})
	}
	if out := plan("A", gateA); out.current || out.known {
		t.Fatalf("spec A, slow: %+v, want nothing known", out)
	}
	close(gateA)
	waitTriggered(t, done)

	out := plan("B", gateB) // the spec changed before the triggered pass; B is slow
	if out.current || !out.known || !out.stale || out.result.Message != "plan of A" {
		t.Fatalf("spec B, slow: current %v, known %v, stale %v, result %+v; want spec A's plan as the last known, stale state only", out.current, out.known, out.stale, out.result)
	}
	if out := plan("B", gateB); out.current || !out.stale { // a pass while B's call runs
		t.Fatalf("spec B, still running: %+v, want spec A's plan, stale", out)
	}
	close(gateB)
	waitTriggered(t, done)
	if out := plan("B", gateB); !out.current || out.stale || out.result.Message != "plan of B" {
		t.Fatalf("spec B, finished: %+v, want its plan as current", out)
	}
	// A poll of the same spec that outlasts the wait: B's plan is the last
	// known state, and of this spec.
	gateC := make(chan struct{})
	defer close(gateC)
	if out := plan("B", gateC); out.current || !out.known || out.stale || out.result.Message != "plan of B" {
		t.Fatalf("spec B, polled again, slow: %+v, want spec B's plan as the last known state, not stale", out)
	}
}

// While the first call of a resource runs, a pass knows nothing of it.
func TestBackgroundCallsFirstCallUnknown(t *testing.T) {
	calls := newBackgroundCalls[*plugin.Result](make(chan event.GenericEvent, 1), nil)
	calls.wait = time.Millisecond
	release := make(chan struct{})
	defer close(release)
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	out := calls.call(context.Background(), b, "gc", []byte(`{}`), func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
		<-release
		return &plugin.Result{}, nil
	})
	if out.current || out.known || out.result != nil || out.err != nil {
		t.Fatalf("first call running: %+v, want nothing known", out)
	}
}

// A call that outlives its state (its Bundle gone, or its resource left the
// spec, while it ran) has its plugin forget the resource once more: the call
// may have left state of it. A resource that left the spec is forgotten, the
// others are kept.
func TestBackgroundCallOutlivingItsState(t *testing.T) {
	type forgotten struct {
		uid        types.UID
		resource   string
		bundleGone bool
	}
	told := make(chan forgotten, 2)
	calls := newBackgroundCalls[*plugin.Result](make(chan event.GenericEvent, 2), func(uid types.UID, resource string, bundleGone bool) {
		told <- forgotten{uid, resource, bundleGone}
	})
	calls.wait = time.Millisecond
	release := make(chan struct{})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	slow := callEndingAt(release)
	calls.call(context.Background(), b, "gc", []byte(`{}`), slow)
	calls.call(context.Background(), b, "routes", []byte(`{}`), slow)
	if removed := calls.forgetRemoved(types.NamespacedName{Namespace: "ns", Name: "shop"}, "u", map[string]bool{"routes": true}); fmt.Sprint(removed) != "[gc]" {
		t.Fatalf("forgetRemoved = %v, want [gc]", removed)
	}
	if uids := calls.forgetBundle(types.NamespacedName{Namespace: "ns", Name: "shop"}); len(uids) != 1 || uids[0] != "u" {
		t.Fatalf("forgetBundle = %v, want [u]", uids)
	}
	close(release)
	got := map[forgotten]bool{}
	for range 2 {
		select {
		case f := <-told:
			got[f] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("calls that outlived their state had %v forgotten, want both resources", got)
		}
	}
	if !got[forgotten{"u", "gc", false}] || !got[forgotten{"u", "routes", true}] {
		t.Errorf("forgotten %v, want the resource u/gc, and u/routes with its Bundle", got)
	}
}

// waitTriggered waits (up to a deadline) for a Bundle sent on done.
func waitTriggered(t *testing.T, done <-chan event.GenericEvent) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call's end did not trigger the Bundle")
	}
}

// A plugin call that panics, in the background or within the wait, is its
// call's error (a *plugin.PanicError with the panic value), which fails its
// resource; the process goes on, the call is over (its end triggers the Bundle
// when nobody waited) and the next call runs. A panic of the plugins' Forget
// after a call outlived its state is recovered too.
func TestBackgroundCallPanics(t *testing.T) {
	forgetPanics := func(types.UID, string, bool) { panic("forget broke") }
	for _, tc := range []struct {
		name string
		wait time.Duration // of the pass that starts the call
		call func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error)
		want string
	}{
		{"makeslice of a forged count, within the wait", time.Minute, func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
			n := int(^uint(0) >> 1)
			return &plugin.Result{Message: fmt.Sprint(len(make([]string, n)))}, nil
		}, "makeslice: len out of range"},
		{"a nil pointer, in the background", time.Millisecond, func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
			time.Sleep(50 * time.Millisecond)
			var res *plugin.Result
			return &plugin.Result{Message: res.Message}, nil
		}, "invalid memory address or nil pointer dereference"},
		{"panic(value)", time.Minute, func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) { panic("boom") }, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan event.GenericEvent, 2)
			calls := newBackgroundCalls[*plugin.Result](done, forgetPanics)
			calls.wait = tc.wait
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
			out := calls.call(context.Background(), b, "deorbit", []byte(`{}`), tc.call)
			if !out.current {
				waitTriggered(t, done)
				out = calls.call(context.Background(), b, "deorbit", []byte(`{}`), tc.call)
			}
			var perr *plugin.PanicError
			if !out.current || out.result != nil || !errors.As(out.err, &perr) || !strings.Contains(out.err.Error(), tc.want) {
				t.Fatalf("outcome %+v, want the call's error, a panic naming %q", out, tc.want)
			}
			// Over: a call of a new input runs, and is taken.
			out = calls.call(context.Background(), b, "deorbit", []byte(`{"v":2}`), func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
				return &plugin.Result{Message: "fine"}, nil
			})
			if !out.current || out.err != nil || out.result.Message != "fine" {
				t.Errorf("the next call: %+v", out)
			}
		})
	}

	t.Run("a Forget that panics after a call outlived its state", func(t *testing.T) {
		forgot := make(chan struct{})
		calls := newBackgroundCalls[*plugin.Result](make(chan event.GenericEvent, 1), func(types.UID, string, bool) {
			defer close(forgot)
			panic("forget broke")
		})
		calls.wait = time.Millisecond
		release := make(chan struct{})
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
		calls.call(context.Background(), b, "gc", []byte(`{}`), func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
			<-release
			return &plugin.Result{}, nil
		})
		calls.forgetBundle(types.NamespacedName{Namespace: "ns", Name: "shop"})
		close(release)
		<-forgot
		time.Sleep(50 * time.Millisecond) // an unrecovered panic ends the process meanwhile
	})
}

// A call that finished in the background and that no pass took for longer
// than unreadMaxAge — its resource Blocked or failing meanwhile, so no pass
// asked for its plan — is not current when a pass asks at last: it is the last
// known state (readiness), and a new call starts, whose result decides items.
// Before, a plan hours old stamped object items and made Tombstones (without a
// delay: deletions at once) of what was an orphan then.
func TestBackgroundCallLeftUnreadGrowsStale(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	calls := newBackgroundCalls[*plugin.Result](done, nil)
	calls.wait = 10 * time.Millisecond
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	calls.clock = clk
	g := &gatedPlugin{gate: make(chan struct{})}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	req := plugin.Request{Resource: "gc", Spec: []byte(`{}`)}
	plan := func() callOutcome[*plugin.Result] {
		return calls.call(context.Background(), b, req.Resource, req.Spec, func(ctx context.Context, _ *limbov1alpha1.Bundle) (*plugin.Result, error) { return g.Plan(ctx, req) })
	}

	g.message.Store("old")
	if out := plan(); out.current { // slow: finishes in the background
		t.Fatalf("the slow call is current at once: %+v", out)
	}
	g.gate <- struct{}{}
	<-done // its end triggers the Bundle; the pass that comes finds the resource Blocked
	clk.SetTime(now.Add(unreadMaxAge + time.Second))

	g.message.Store("new")
	out := plan()
	if out.current || !out.known || out.result == nil || out.result.Message != "old" {
		t.Fatalf("the call left unread %v: %+v, want it as the last known state, not current", unreadMaxAge, out)
	}
	g.gate <- struct{}{} // the new call, started by that pass
	<-done
	if out := plan(); !out.current || out.result.Message != "new" {
		t.Errorf("the next pass: %+v, want the new call, current", out)
	}
}

// A call of a resource that left the spec and came back while it ran does not
// have the plugins forget the resource when it ends: its state is the new
// call's now. Before, the late end dropped it (namespace-gc's GC delay began
// again, node-removal's gauge series went).
func TestBackgroundCallOfAResourceReAdded(t *testing.T) {
	told := make(chan string, 2)
	calls := newBackgroundCalls[*plugin.Result](make(chan event.GenericEvent, 4), func(_ types.UID, resource string, _ bool) { told <- resource })
	calls.wait = time.Millisecond
	release := make(chan struct{})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	slow := callEndingAt(release)
	fast := callEndingAt(nil)
	calls.call(context.Background(), b, "gc", []byte(`{}`), slow)
	calls.forgetRemoved(types.NamespacedName{Namespace: "ns", Name: "shop"}, "u", map[string]bool{}) // gc left the spec
	calls.call(context.Background(), b, "gc", []byte(`{}`), fast)                                    // and came back
	close(release)
	// The first call's end: nothing forgotten. Polled with a deadline, as its
	// end runs in the background.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case resource := <-told:
			t.Fatalf("the plugins were told to forget %q, which is back in the spec", resource)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// callEndingAt is a plugin call that ends, with an empty result, once end is
// closed (at once for nil).
func callEndingAt(end <-chan struct{}) func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
	return func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
		if end != nil {
			<-end
		}
		return &plugin.Result{}, nil
	}
}
