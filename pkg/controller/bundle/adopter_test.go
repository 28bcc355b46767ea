package bundle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/shard"
)

// The adopter of an object is looked for in the cache by a single controller, and
// in the API server's Bundles by a sharded one: its cache holds only its shard's
// Bundles, and an adopter of another shard must count (the object was deleted).
func TestAdopter(t *testing.T) {
	leaving := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "old", UID: "old-uid"},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "keep")}}}
	adopting := func(name, object string, adopt bool) *limbov1alpha1.Bundle {
		annotations := map[string]any{}
		if adopt {
			annotations[limbov1alpha1.AnnotationAdopt] = "true"
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": object, "annotations": annotations}})
		if err != nil {
			t.Fatal(err)
		}
		return &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
			Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: object, Object: &runtime.RawExtension{Raw: raw}}}}}
	}
	deleting := adopting("deleting", "db", true)
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{limbov1alpha1.FinalizerTeardown}
	otherNamespace := adopting("elsewhere", "db", true)
	otherNamespace.Namespace = "other"
	sharded, err := shard.Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		// cached are the Bundles the controller's cache holds; the API server
		// holds them and apiOnly.
		cached, apiOnly []client.Object
		shard           *shard.Selector
		want            string
	}{
		{name: "none", cached: []client.Object{leaving, adopting("other", "app", true)}},
		{name: "declared without adopt", cached: []client.Object{leaving, adopting("other", "db", false)}},
		{name: "adopter in the cache", cached: []client.Object{leaving, adopting("new", "db", true)}, want: "new"},
		{name: "being deleted, or of another namespace", cached: []client.Object{leaving, deleting, otherNamespace}},
		{name: "single controller: the cache is every Bundle", cached: []client.Object{leaving}, apiOnly: []client.Object{adopting("new", "db", true)}},
		{name: "sharded: an adopter of another shard", cached: []client.Object{leaving}, apiOnly: []client.Object{adopting("new", "db", true)}, shard: sharded, want: "new"},
		{name: "sharded: none", cached: []client.Object{leaving, deleting}, apiOnly: []client.Object{adopting("other", "db", false)}, shard: sharded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := limbov1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			apiLists := 0
			build := func(lists *int, objects ...client.Object) client.Client {
				for i, o := range objects {
					objects[i] = o.DeepCopyObject().(client.Object)
				}
				return fake.NewClientBuilder().WithScheme(scheme).WithIndex(&limbov1alpha1.Bundle{}, adoptionIndex, adoptionKeys).WithObjects(objects...).
					WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
						*lists++
						return c.List(ctx, list, opts...)
					}}).Build()
			}
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			r := &Reconciler{Client: build(new(int), tt.cached...), APIReader: build(&apiLists, append(append([]client.Object{}, tt.cached...), tt.apiOnly...)...),
				Shard: tt.shard, Clock: clk}
			adopters := r.adopters(leaving)
			// A wave looks up each of its objects: db, then one nobody adopts,
			// then db again, once the listing is adoptersMaxAge old.
			for i, object := range []struct{ name, want string }{{"db", tt.want}, {"cache", ""}, {"db", tt.want}} {
				if i == 2 {
					clk.SetTime(clk.Now().Add(adoptersMaxAge))
				}
				o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: object.name}}
				o.SetGroupVersionKind(configMapGVK)
				got, err := adopters.of(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				name := ""
				if got != nil {
					name = got.Name
					if got.Namespace != "shop" {
						t.Errorf("adopter %v is of another namespace", got)
					}
				}
				if name != object.want {
					t.Errorf("adopter of %s = %q, want %q", object.name, name, object.want)
				}
			}
			// The API server's Bundles are listed by a sharded controller only:
			// once for the first two lookups, again once that listing is old.
			if want := map[bool]int{true: 2, false: 0}[tt.shard != nil]; apiLists != want {
				t.Errorf("the API server's Bundles were listed %d times, want %d", apiLists, want)
			}
		})
	}
}
