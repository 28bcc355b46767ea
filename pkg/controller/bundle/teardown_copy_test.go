package bundle

import (
	"context"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// recordingTeardown's teardowns are done at once; it records the state each
// call resumed from.
type recordingTeardown struct {
	mu     *sync.Mutex
	states *[]string
}

func (recordingTeardown) Describe() plugin.Description { return plugin.Description{Name: "recording"} }

func (recordingTeardown) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (r recordingTeardown) Teardown(_ context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.states = append(*r.states, req.TeardownState)
	return &plugin.TeardownResult{Done: true, Message: "done"}, nil
}

// A Bundle restored from a copy taken during its teardown (a backup) carries
// that teardown's marks: its state, its done marks. Read as its own, its
// teardown skipped the plugin (deorbit: a workload cluster's volumes and load
// balancers left behind) or resumed from another Bundle's state. The marks
// name the Bundle that wrote them (teardown-of.limbo.dev), and another's are
// not read; marks that name none (written before that annotation) still are.
func TestTeardownMarksOfAnotherBundleAreNotRead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		of         string // teardown-of.limbo.dev; "" for none
		wantCalled bool
	}{
		{"marks of the Bundle itself", "b-uid", false},
		{"marks written before they named their Bundle", "", false},
		{"marks of another Bundle (a copy)", "old-uid", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var states []string
			registry, err := plugin.NewRegistry(recordingTeardown{mu: &sync.Mutex{}, states: &states})
			if err != nil {
				t.Fatal(err)
			}
			status := limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
			b := deletedBundle([]limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "recording"}}}, status)
			b.Annotations = map[string]string{
				limbov1alpha1.AnnotationTeardownStatePrefix + "sweep": "old-state",
				limbov1alpha1.AnnotationTeardownDonePrefix + "sweep":  "true",
			}
			if tc.of != "" {
				b.Annotations[limbov1alpha1.AnnotationTeardownOf] = tc.of
			}
			f := newTeardownFixture(t, b, registry)
			f.reconcileUntil(t, "the Bundle is not let go", func() bool {
				var cur limbov1alpha1.Bundle
				err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur)
				return apierrors.IsNotFound(err) || err == nil && !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown)
			})
			switch {
			case tc.wantCalled && !slices.Equal(states, []string{""}):
				t.Errorf("teardown calls resumed from %q, want one call from no state (the copy's marks are another Bundle's)", states)
			case !tc.wantCalled && len(states) > 0:
				t.Errorf("teardown called (from %q), its done mark ignored", states)
			}
		})
	}
}
