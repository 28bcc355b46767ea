package bundle

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// planner is a plugin whose plans say its name; gate, when set, holds each
// plan until it is closed.
type planner struct {
	name string
	gate chan struct{}
}

func (p planner) Describe() plugin.Description { return plugin.Description{Name: p.name} }

func (p planner) Plan(ctx context.Context, _ plugin.Request) (*plugin.Result, error) {
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &plugin.Result{Ready: true, Message: "planned by " + p.name}, nil
}

// A plugin resource switched to another plugin with the same spec is planned
// by the new plugin: the old one's plan, finished after the switch and not
// read yet, was taken for the new one's (the call's input was the spec alone).
func TestPluginResourceSwitchedToAnotherPlugin(t *testing.T) {
	gate := make(chan struct{})
	registry, err := plugin.NewRegistry(planner{name: "old", gate: gate}, planner{name: "new"})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "job", Plugin: &limbov1alpha1.PluginResource{Name: "old"}})
	f := newTeardownFixture(t, b, registry)
	f.reconcile(t) // old's plan runs past the wait
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources[0].Plugin.Name = "new"
	cur.Generation++
	if err := f.c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	close(gate) // old's plan ends, unread
	f.reconcileUntil(t, "resource job planned", f.resourceReady(t, "job"))
	for _, st := range f.status(t).Resources {
		if st.Name == "job" && st.Message != "planned by new" {
			t.Errorf("resource job: %q, want the new plugin's plan", st.Message)
		}
	}
}
