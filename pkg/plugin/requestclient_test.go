package plugin_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A plugin's reads come from the cache only where it holds what they ask for
// whole — a watched kind, in the form it is watched, in a namespace the
// controller watches — and from the API server otherwise. Writes go to the
// cache's client (the Bundle's writer).
func TestRequestClientRoutesReads(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	namespace := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	metadataOf := func(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	configMaps, namespaces := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("Namespace")
	// The cache and the API server differ, so that each answer says where it
	// came from: the cache has 1 ConfigMap in team and 2 Namespaces, the API
	// server 3 ConfigMaps in team, 1 in shop and 1 Namespace.
	cache := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(scheme)).WithObjects(cm("team", "managed"), namespace("team"), namespace("shop")).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm("team", "managed"), cm("team", "user-1"), cm("team", "user-2"), cm("shop", "other"), namespace("team")).Build()
	ctx := context.Background()

	unstructuredList := func(gvk schema.GroupVersionKind) client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
	metadataList := func(gvk schema.GroupVersionKind) client.ObjectList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
	for _, tc := range []struct {
		name       string
		cached     []client.Object
		namespaces []string
		list       client.ObjectList
		opts       []client.ListOption
		want       int
	}{
		{name: "a kind not watched: the API server", list: &corev1.ConfigMapList{}, want: 4},
		{name: "a kind not watched, unstructured", list: unstructuredList(configMaps), want: 4},
		{name: "a kind not watched, metadata", list: metadataList(configMaps), want: 4},
		{name: "a watched kind: the cache", cached: []client.Object{&corev1.Namespace{}}, list: &corev1.NamespaceList{}, want: 2},
		// The cache keeps one informer per form: another form would start one.
		{name: "a kind watched typed, read unstructured", cached: []client.Object{&corev1.Namespace{}}, list: unstructuredList(namespaces), want: 1},
		{name: "a kind watched typed, read as metadata", cached: []client.Object{&corev1.Namespace{}}, list: metadataList(namespaces), want: 1},
		{name: "a kind watched as metadata, read so", cached: []client.Object{metadataOf(namespaces)}, list: metadataList(namespaces), want: 2},
		{name: "a kind watched as metadata, read typed", cached: []client.Object{metadataOf(namespaces)}, list: &corev1.NamespaceList{}, want: 1},
		// With --namespaces the cache holds a namespaced kind in those only.
		{name: "watched, in a namespace the cache watches", cached: []client.Object{&corev1.ConfigMap{}}, namespaces: []string{"team"},
			list: &corev1.ConfigMapList{}, opts: []client.ListOption{client.InNamespace("team")}, want: 1},
		{name: "watched, across namespaces with --namespaces", cached: []client.Object{&corev1.ConfigMap{}}, namespaces: []string{"team"},
			list: &corev1.ConfigMapList{}, want: 4},
		{name: "watched, in another namespace", cached: []client.Object{&corev1.ConfigMap{}}, namespaces: []string{"team"},
			list: &corev1.ConfigMapList{}, opts: []client.ListOption{client.InNamespace("shop")}, want: 1},
		{name: "a cluster-scoped kind with --namespaces", cached: []client.Object{&corev1.Namespace{}}, namespaces: []string{"team"},
			list: &corev1.NamespaceList{}, want: 2},
	} {
		t.Run("list: "+tc.name, func(t *testing.T) {
			c := plugin.RequestClient(cache, live, tc.cached, tc.namespaces)
			if err := c.List(ctx, tc.list, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if got := itemCount(t, tc.list); got != tc.want {
				t.Errorf("listed %d, want %d", got, tc.want)
			}
		})
	}

	c := plugin.RequestClient(cache, live, []client.Object{&corev1.Namespace{}, &corev1.ConfigMap{}}, []string{"team"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: "user-1"}, &corev1.ConfigMap{}); err == nil {
		t.Error("a ConfigMap of a watched namespace was read from the API server, not the cache")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "other"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("get of a ConfigMap outside the cache's namespaces: %v, want it read from the API server", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "shop"}, &corev1.Namespace{}); err != nil {
		t.Errorf("get of a cached Namespace: %v, want it read from the cache", err)
	}
	if err := c.Create(ctx, cm("team", "written")); err != nil {
		t.Fatal(err)
	}
	if err := cache.Get(ctx, client.ObjectKey{Namespace: "team", Name: "written"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("a write did not go to the writer: %v", err)
	}
}

// itemCount counts a list's items.
func itemCount(t *testing.T, l client.ObjectList) int {
	t.Helper()
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
