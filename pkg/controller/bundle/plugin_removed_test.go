package bundle

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// countingSweeper is sweeper, counting its teardowns.
type countingSweeper struct {
	sweeper
	teardowns *atomic.Int32
}

func (s countingSweeper) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	s.teardowns.Add(1)
	return s.sweeper.Teardown(ctx, req)
}

// A teardown plugin's resource removed from a Bundle that lives (deorbit's,
// dropped from the spec or the spec emptied with allowEmpty) deletes nothing:
// its teardown runs only when its Bundle is deleted (DESIGN §5, deorbit: "while
// its Bundle lives, deorbit deletes nothing"; §3: removing a cleanup job stops
// its deletions). The objects it would hand the engine stay, unstamped.
func TestRemovedTeardownPluginDeletesNothing(t *testing.T) {
	teardowns := &atomic.Int32{}
	registry, err := plugin.NewRegistry(countingSweeper{sweeper: sweeper{done: &atomic.Bool{}}, teardowns: teardowns})
	if err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data-0"}}
	// The last pass saw the plugin resource; the spec has dropped it since.
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	b := deletedBundle(nil, status)
	b.DeletionTimestamp, b.Generation = nil, 2
	b.Spec.AllowEmpty = true
	f := newTeardownFixture(t, b, registry, claim)
	for range 2 {
		f.reconcile(t)
	}
	if n := teardowns.Load(); n != 0 {
		t.Errorf("the removed plugin resource's teardown ran %d times, want never", n)
	}
	var cur corev1.PersistentVolumeClaim
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &cur); err != nil {
		t.Fatalf("the claim: %v", err)
	}
	if len(cur.Annotations) != 0 || cur.Labels[limbov1alpha1.LabelPendingDeletion] != "" {
		t.Errorf("the claim was put in limbo: %v %v", cur.Annotations, cur.Labels)
	}
}
