package bundle

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// gaveUp is a plugin whose teardown ends at once with a warning, as a
// deorbit that gave up does.
type gaveUp struct{}

func (gaveUp) Describe() plugin.Description { return plugin.Description{Name: "gave-up"} }

func (gaveUp) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (gaveUp) Teardown(context.Context, plugin.Request) (*plugin.TeardownResult, error) {
	const w = "gave up: timeout 24h0m0s passed; debris left behind: 1 PVC (app/data)"
	return &plugin.TeardownResult{Done: true, Message: w, Warning: w}, nil
}

// The warning a plugin teardown ended with (a deorbit that gave up, naming
// the debris) stays in DeletionFailure for the rest of the teardown, as
// plugin.TeardownResult promises: it was there for the pass the teardown ended
// in only, the later passes reading a done mark that kept nothing of it.
func TestTeardownWarningStaysForTheRestOfTheTeardown(t *testing.T) {
	registry, err := plugin.NewRegistry(gaveUp{})
	if err != nil {
		t.Fatal(err)
	}
	b := deletedBundle([]limbov1alpha1.Resource{{Name: "deorbit", Plugin: &limbov1alpha1.PluginResource{Name: "gave-up"}}, configMapResource(t, "held")},
		limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	// A ConfigMap another controller's finalizer holds: the waves go on.
	f := newTeardownFixture(t, b, registry, bundleConfigMap("held", nil, "example.com/backup"))
	warned := func() error {
		c := meta.FindStatusCondition(f.status(t).Conditions, limbov1alpha1.ConditionDeletionFailure)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "debris left behind: 1 PVC (app/data)") {
			return fmt.Errorf("DeletionFailure %+v, want True naming the debris", c)
		}
		return nil
	}
	f.reconcileUntil(t, "no warning", func() bool { return warned() == nil })
	for pass := range 3 {
		f.reconcile(t)
		if err := warned(); err != nil {
			t.Fatalf("pass %d after the teardown ended: %v", pass+1, err)
		}
	}
}
