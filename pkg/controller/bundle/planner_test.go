package bundle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// A slow plan never holds a pass longer than the planner's wait: the pass goes
// on with the last known state, the plan's end triggers the Bundle, the next
// pass takes it as current, and one plan of a resource runs at a time.
func TestPlannerNeverHoldsAPass(t *testing.T) {
	done := make(chan event.GenericEvent, 4)
	pl := newPlanner(done)
	pl.wait = 50 * time.Millisecond
	g := &gatedPlugin{gate: make(chan struct{})}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "u"}}
	req := plugin.Request{Resource: "gc", Spec: []byte(`{}`)}
	ctx := context.Background()

	// A fast first plan is current.
	g.message.Store("first")
	go func() { g.gate <- struct{}{} }()
	if out := pl.plan(ctx, b, g, req); !out.current || out.result.Message != "first" {
		t.Fatalf("fast plan: %+v, want the current result", out)
	}
	if len(done) != 0 {
		t.Fatal("a plan the pass waited for triggered the Bundle again")
	}

	// A slow one: the pass gets the last known state, not current.
	g.message.Store("second")
	start := time.Now()
	out := pl.plan(ctx, b, g, req)
	if out.current || out.result == nil || out.result.Message != "first" {
		t.Fatalf("slow plan: %+v, want the last known state", out)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the pass waited %v", waited)
	}
	// Another pass meanwhile starts no second plan.
	if out := pl.plan(ctx, b, g, req); out.current {
		t.Fatalf("second pass: %+v, want the last known state", out)
	}
	g.gate <- struct{}{}
	select {
	case e := <-done:
		if e.Object.GetName() != "shop" {
			t.Errorf("triggered %s, want shop", e.Object.GetName())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the plan's end did not trigger the Bundle")
	}
	if out := pl.plan(ctx, b, g, req); !out.current || out.result.Message != "second" {
		t.Fatalf("after the slow plan: %+v, want it as current", out)
	}
	if most := g.most.Load(); most != 1 {
		t.Errorf("%d plans of one resource ran at once, want 1", most)
	}
}
