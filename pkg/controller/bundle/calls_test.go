package bundle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

	// A fast first call is current.
	g.message.Store("first")
	go func() { g.gate <- struct{}{} }()
	if out := plan(); !out.current || out.result.Message != "first" {
		t.Fatalf("fast call: %+v, want the current result", out)
	}
	if len(done) != 0 {
		t.Fatal("a call the pass waited for triggered the Bundle again")
	}

	// A slow one: the pass gets the last known state, not current.
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

// A call that outlives its Bundle (forgotten while it ran) has its plugin
// forget the Bundle once more: the call may have left state of it.
func TestBackgroundCallOutlivingItsBundle(t *testing.T) {
	forgotten := make(chan types.UID, 1)
	calls := newBackgroundCalls[*plugin.Result](make(chan event.GenericEvent, 1), func(uid types.UID) { forgotten <- uid })
	calls.wait = time.Millisecond
	release := make(chan struct{})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	calls.call(context.Background(), b, "gc", []byte(`{}`), func(context.Context, *limbov1alpha1.Bundle) (*plugin.Result, error) {
		<-release
		return &plugin.Result{}, nil
	})
	if uids := calls.forgetBundle(types.NamespacedName{Namespace: "ns", Name: "shop"}); len(uids) != 1 || uids[0] != "u" {
		t.Fatalf("forgetBundle = %v, want [u]", uids)
	}
	close(release)
	select {
	case uid := <-forgotten:
		if uid != "u" {
			t.Errorf("forgot %q, want u", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call that outlived its Bundle did not have it forgotten")
	}
}
