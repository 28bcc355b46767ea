package bundle

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A plugin's watch event (a Node's, a Namespace's) maps to the Bundles that
// use the plugin, read from the cache without a copy of each, through the
// index of the plugins Bundles use: every event of every Node copied every
// Bundle of the cluster (3,000 Bundles: 49 MB and 65–106 ms of CPU an event),
// and then still listed them all (2,000 Bundles: 1–2 ms and 1 MB an event),
// even where no Bundle used the plugin.
func TestBundlesUsingReadsWithoutCopies(t *testing.T) {
	uses := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nodes"},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: "node-removal"}}}}}
	other := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: "route-gc"}}}}}
	f := newTeardownFixture(t, uses, nil, other)
	copied, selected := true, ""
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		o := &client.ListOptions{}
		o.ApplyOptions(opts)
		copied = o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy
		if o.FieldSelector != nil {
			selected = o.FieldSelector.String()
		}
		return c.List(ctx, list, opts...)
	}})
	got := f.r.bundlesUsing([]string{"node-removal"})(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	if want := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(uses)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests = %v, want %v", got, want)
	}
	if copied {
		t.Error("the Bundles were listed with a deep copy of each")
	}
	if want := pluginIndex + "=node-removal"; selected != want {
		t.Errorf("the Bundles were listed with field selector %q, want %q: every Bundle read, whatever it uses", selected, want)
	}
}
