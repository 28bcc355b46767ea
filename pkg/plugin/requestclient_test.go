package plugin_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A plugin's reads of the kinds the cache holds whole come from the cache; of
// any other kind — of which the cache holds only what limbo manages — from the
// API server. Writes go to the cache's client (the Bundle's writer).
func TestRequestClientRoutesReads(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
	}
	nsObj := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	// The cache holds one managed ConfigMap of three, and every Namespace.
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm("managed"), nsObj("team"), nsObj("shop")).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm("managed"), cm("user-1"), cm("user-2"), nsObj("team")).Build()
	namespaces := corev1.SchemeGroupVersion.WithKind("Namespace")
	c := plugin.RequestClient(cache, live, func(gvk schema.GroupVersionKind) bool { return gvk == namespaces })
	ctx := context.Background()

	unstructuredList := func(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
	metadataList := func(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
	count := func(l client.ObjectList) int {
		switch l := l.(type) {
		case *corev1.ConfigMapList:
			return len(l.Items)
		case *corev1.NamespaceList:
			return len(l.Items)
		case *unstructured.UnstructuredList:
			return len(l.Items)
		case *metav1.PartialObjectMetadataList:
			return len(l.Items)
		}
		t.Fatalf("unexpected list %T", l)
		return 0
	}
	for _, tc := range []struct {
		name string
		list client.ObjectList
		want int
	}{
		{"typed, not cached whole: the API server's three", &corev1.ConfigMapList{}, 3},
		{"unstructured, not cached whole", unstructuredList(corev1.SchemeGroupVersion.WithKind("ConfigMap")), 3},
		{"metadata, not cached whole", metadataList(corev1.SchemeGroupVersion.WithKind("ConfigMap")), 3},
		{"typed, cached whole: the cache's two", &corev1.NamespaceList{}, 2},
		{"unstructured, cached whole", unstructuredList(namespaces), 2},
		{"metadata, cached whole", metadataList(namespaces), 2},
	} {
		t.Run("list "+tc.name, func(t *testing.T) {
			if err := c.List(ctx, tc.list); err != nil {
				t.Fatal(err)
			}
			if got := count(tc.list); got != tc.want {
				t.Errorf("listed %d, want %d", got, tc.want)
			}
		})
	}

	if err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "user-1"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("get of an unmanaged ConfigMap: %v, want it read from the API server", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "shop"}, &corev1.Namespace{}); err != nil {
		t.Errorf("get of a cached Namespace: %v, want it read from the cache", err)
	}

	if err := c.Create(ctx, cm("written")); err != nil {
		t.Fatal(err)
	}
	if err := cache.Get(ctx, client.ObjectKey{Namespace: "team", Name: "written"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("a write did not go to the writer: %v", err)
	}
}
