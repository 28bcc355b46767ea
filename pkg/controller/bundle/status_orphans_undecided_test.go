package bundle

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A pass that could not list the orphans decided nothing about what left the
// spec: its status says Reconciling (retried), not done, however Ready its
// resources are. It said Reconciling False, and kstatus (kubectl wait, Flux,
// Argo CD) took the generation for done while a removed object stayed.
func TestStatusOfAPassThatCouldNotListTheOrphans(t *testing.T) {
	registry, err := plugin.NewRegistry(neverReady{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(cmResource(t, "keep", nil))
	f := newTeardownFixture(t, b, registry, bundleConfigMap("keep", nil), bundleConfigMap("left", nil))
	f.r.Client = interceptor.NewClient(labelledCache(f.c.(client.WithWatch)), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, bundles := list.(*limbov1alpha1.BundleList); !bundles {
				return errors.New("the cache of ConfigMaps has not synced")
			}
			return c.List(ctx, list, opts...)
		},
	})
	_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	st := f.status(t)
	ready := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionReady)
	reconciling := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionReconciling)
	if ready == nil || ready.Status != "True" || reconciling == nil || reconciling.Status != "True" || reconciling.Reason != limbov1alpha1.ReasonProgressingWithRetry {
		t.Errorf("conditions %+v; want Ready True and Reconciling True (%s)", st.Conditions, limbov1alpha1.ReasonProgressingWithRetry)
	}
	if f.liveConfigMap(t, "left") == nil {
		t.Error("ConfigMap left was deleted on a listing that failed")
	}
}

// The same for a sharded controller's listing of the Bundle's objects with the
// API server (decideUnseenOrphans): one that fails decided nothing about the
// objects only it would show, and the pass is retried — Reconciling True, not
// a generation taken for done.
func TestStatusOfAPassThatCouldNotListTheUnseenOrphans(t *testing.T) {
	sel, registry := shardA(t)
	b := livingBundle(cmResource(t, "keep", nil))
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	keep := bundleConfigMap("keep", nil)
	keep.Labels["limbo.dev/shard"] = "a"
	f := newTeardownFixture(t, b, registry, keep)
	f.r.Shard, f.r.Engine.Shard = sel, sel
	f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool { return sel.Matches(o.GetLabels()) })
	f.r.APIReader = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, bundles := list.(*limbov1alpha1.BundleList); !bundles {
				return errors.New("etcdserver: request timed out")
			}
			return c.List(ctx, list, opts...)
		},
	})
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil {
		t.Error("Reconcile succeeded; want the listing's error (retried)")
	}
	st := f.status(t)
	reconciling := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionReconciling)
	if reconciling == nil || reconciling.Status != "True" || reconciling.Reason != limbov1alpha1.ReasonProgressingWithRetry {
		t.Errorf("conditions %+v; want Reconciling True (%s)", st.Conditions, limbov1alpha1.ReasonProgressingWithRetry)
	}
}
