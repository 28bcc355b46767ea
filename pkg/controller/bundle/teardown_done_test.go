package bundle

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A plugin teardown done is not resolved again: its spec's references may name
// an object the waves after it delete (deorbit reading its kubeconfig Secret's
// name from the Cluster object it tears down first), and a spec that no longer
// resolves held the Bundle Terminating for good, before its waves and its
// finalizer's removal.
func TestTeardownDoneIsNotResolvedAgain(t *testing.T) {
	done := &atomic.Bool{}
	done.Store(true)
	registry, err := plugin.NewRegistry(sweeper{done: done})
	if err != nil {
		t.Fatal(err)
	}
	sweep := limbov1alpha1.Resource{Name: "sweep", References: []limbov1alpha1.Reference{{Resource: "cm"}},
		Plugin: &limbov1alpha1.PluginResource{Name: "sweeper"}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{
		{Name: "cm", State: limbov1alpha1.ResourceReady, Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cm"}},
		{Name: "sweep", State: limbov1alpha1.ResourceReady},
	}}
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "cm"), sweep}, status)
	f := newTeardownFixture(t, b, registry, bundleConfigMap("cm", nil))
	f.reconcileUntil(t, "the Bundle is not let go", func() bool {
		var cur limbov1alpha1.Bundle
		err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur)
		return apierrors.IsNotFound(err) || err == nil && !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown)
	})
	if cm := f.liveConfigMap(t, "cm"); cm != nil {
		t.Errorf("ConfigMap cm is still there: %+v", cm.ObjectMeta)
	}
}
