package bundle

import (
	"context"
	"sync"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// stateRecorder is a plugin whose teardown records the state it resumes from
// and goes on to "s2".
type stateRecorder struct {
	mu      *sync.Mutex
	resumed *[]string
}

func (stateRecorder) Describe() plugin.Description { return plugin.Description{Name: "state-recorder"} }

func (stateRecorder) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (s stateRecorder) Teardown(_ context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	s.mu.Lock()
	*s.resumed = append(*s.resumed, req.TeardownState)
	s.mu.Unlock()
	return &plugin.TeardownResult{State: "s2", Message: "going on"}, nil
}

// A plugin teardown resumes from the state the last pass kept on the Bundle,
// read from the API server: the cache may show the Bundle from before that
// write (a watch lagging), and a call resumed from the older state would have
// overwritten the newer one (deorbit: a load-balancer wait lost, the deorbit
// ended early).
func TestTeardownResumesFromTheStateLastKept(t *testing.T) {
	var mu sync.Mutex
	var resumed []string
	registry, err := plugin.NewRegistry(stateRecorder{mu: &mu, resumed: &resumed})
	if err != nil {
		t.Fatal(err)
	}
	res := limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "state-recorder"}}
	b := deletedBundle([]limbov1alpha1.Resource{res}, limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	b.Annotations = map[string]string{limbov1alpha1.AnnotationTeardownStatePrefix + "sweep": "s1"} // the API server's
	f := newTeardownFixture(t, b, registry)
	stale := b.DeepCopy()
	stale.Annotations[limbov1alpha1.AnnotationTeardownStatePrefix+"sweep"] = "s0" // the cache's, from before
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if cur, ok := obj.(*limbov1alpha1.Bundle); ok {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			cur.Annotations = stale.Annotations
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	mu.Lock()
	defer mu.Unlock()
	if len(resumed) == 0 || resumed[0] != "s1" {
		t.Errorf("the teardown resumed from %q, want the state last kept, s1", resumed)
	}
}
