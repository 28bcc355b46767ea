package limboscan

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/listpages/listpagestest"
)

type fakeDiscovery struct {
	lists []*metav1.APIResourceList
	err   error
}

func (f fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return f.lists, f.err
}

var all = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}

func lists() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: all},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
			{Name: "configmaps/status", Kind: "ConfigMap", Namespaced: true, Verbs: all},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: metav1.Verbs{"list"}},
			{Name: "namespaces", Kind: "Namespace", Namespaced: false, Verbs: all},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all},
		}},
		// What a broken aggregated API can put in discovery: skipped.
		{GroupVersion: "bad/group/version", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
		}},
		nil,
		// The same group version twice (discovery merged from two sources):
		// its kinds once.
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all},
		}},
	}
}

func TestKinds(t *testing.T) {
	partial := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503")}}
	tests := []struct {
		name  string
		d     fakeDiscovery
		verbs []string
		want  string
		err   error
	}{
		{name: "listable", d: fakeDiscovery{lists: lists()},
			want: "[/v1, Resource=configmaps /v1, Resource=events /v1, Resource=secrets apps/v1, Resource=deployments]"},
		{name: "listable and deletable", d: fakeDiscovery{lists: lists()}, verbs: []string{"delete", "patch"},
			want: "[/v1, Resource=configmaps /v1, Resource=secrets apps/v1, Resource=deployments]"},
		{name: "partial discovery failure", d: fakeDiscovery{lists: lists()[1:], err: partial},
			want: "[apps/v1, Resource=deployments]", err: partial},
		{name: "discovery failure", d: fakeDiscovery{err: errors.New("connection refused")}, want: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kinds, err := Kinds(tt.d, tt.verbs...)
			resources := make([]schema.GroupVersionResource, len(kinds))
			for i, k := range kinds {
				resources[i] = k.Resource
				if k.Kind.GroupVersion() != k.Resource.GroupVersion() || k.Kind.Kind == "" {
					t.Errorf("kind %+v does not match its resource", k)
				}
			}
			if got := fmt.Sprint(resources); got != tt.want {
				t.Errorf("Kinds = %s, want %s", got, tt.want)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("error = %v, want %v", err, tt.err)
			}
			if tt.d.err != nil && err == nil {
				t.Error("the discovery error is lost")
			}
		})
	}
}

func TestList(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := func(ns, name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	pending := map[string]string{limbov1alpha1.LabelPendingDeletion: "true"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		cm("a", "in-limbo", pending),
		cm("b", "in-limbo-too", pending),
		cm("a", "kept", map[string]string{limbov1alpha1.LabelBundle: "shop"}),
		cm("a", "other-value", map[string]string{limbov1alpha1.LabelPendingDeletion: "false"}),
		// The endpoint controllers' copies of a Service's labels are not
		// listed; an object of that label another manager set is.
		cm("c", "endpoints-copy", map[string]string{limbov1alpha1.LabelPendingDeletion: "true", "endpoints.kubernetes.io/managed-by": "endpoint-controller"}),
		cm("c", "slice-copy", map[string]string{limbov1alpha1.LabelPendingDeletion: "true", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}),
		cm("c", "mirrored-copy", map[string]string{limbov1alpha1.LabelPendingDeletion: "true", "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}),
		cm("c", "declared-slice", map[string]string{limbov1alpha1.LabelPendingDeletion: "true", "endpointslice.kubernetes.io/managed-by": "example.com/my-controller"}),
	).WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		// The API server's items of a metadata list say what they are,
		// not which kind.
		for i := range list.(*metav1.PartialObjectMetadataList).Items {
			list.(*metav1.PartialObjectMetadataList).Items[i].TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
		}
		return nil
	}}).Build()
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for ns, want := range map[string]string{"a": "[a/in-limbo]", "": "[a/in-limbo b/in-limbo-too c/declared-slice]", "c": "[c/declared-slice]", "d": "[]"} {
		items, err := List(context.Background(), c, gvk, ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, item := range items {
			names = append(names, item.Namespace+"/"+item.Name)
			if item.GroupVersionKind() != gvk {
				t.Errorf("%s has GVK %v, want %v", item.Name, item.GroupVersionKind(), gvk)
			}
		}
		if got := fmt.Sprint(names); got != want {
			t.Errorf("List in %q = %s, want %s", ns, got, want)
		}
	}
}

// A failed list is an error and no items: never a partial list taken for all
// there is in limbo.
func TestListFailed(t *testing.T) {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("connection refused")
	}}).Build()
	if items, err := List(context.Background(), c, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "a", nil); err == nil || items != nil {
		t.Errorf("List = %v, %v; want no items and the error", items, err)
	}
}

// With a client.Limit, List reads every page: a namespace's objects in limbo
// are not cut at the first.
func TestListPages(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pending := map[string]string{limbov1alpha1.LabelPendingDeletion: "true"}
	var objects []client.Object
	for _, name := range []string{"a", "b", "c"} {
		objects = append(objects, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: pending}})
	}
	pages := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
		List: listpagestest.List(func(client.ObjectList, *client.ListOptions) { pages++ }),
	}).Build()
	items, err := List(context.Background(), c, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "ns", nil, client.Limit(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || pages != 2 {
		t.Errorf("List read %d objects in %d pages, want 3 in 2", len(items), pages)
	}
}

// An API that ignores the label selector (an aggregated one may) lists
// everything: List keeps only what the selector matches, since what it returns
// is taken to be in limbo.
func TestListFiltersWhatTheServerDidNot(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, Labels: labels}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		cm("in-limbo", map[string]string{limbov1alpha1.LabelPendingDeletion: "true", "shard": "x"}),
		cm("other-shard", map[string]string{limbov1alpha1.LabelPendingDeletion: "true", "shard": "y"}),
		cm("kept", map[string]string{limbov1alpha1.LabelBundle: "shop"}),
		cm("other-value", map[string]string{limbov1alpha1.LabelPendingDeletion: "false"}),
	).WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		var kept []client.ListOption
		for _, opt := range opts {
			if _, selector := opt.(client.MatchingLabelsSelector); !selector {
				kept = append(kept, opt)
			}
		}
		return c.List(ctx, list, kept...)
	}}).Build()
	items, err := List(context.Background(), c, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "a", labels.SelectorFromSet(labels.Set{"shard": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, item := range items {
		names = append(names, item.Name)
	}
	if got := fmt.Sprint(names); got != "[in-limbo]" {
		t.Errorf("List = %s, want [in-limbo]", got)
	}
}

// Holds asks for one object, metadata only, of the kind, namespace and
// selector given, and answers whether there is one.
func TestHolds(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	managed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "managed", Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}}}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "plain"}}
	var lists []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(managed, plain).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			o := (&client.ListOptions{}).ApplyOptions(opts)
			lists = append(lists, fmt.Sprintf("%T %s ns=%q selector=%q limit=%d", list, list.GetObjectKind().GroupVersionKind().Kind, o.Namespace, o.LabelSelector, o.Limit))
			return c.List(ctx, list, opts...)
		},
	}).Build()
	bundleLabelled, err := labels.Parse(limbov1alpha1.LabelBundle)
	if err != nil {
		t.Fatal(err)
	}
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for _, tt := range []struct {
		namespace string
		want      bool
	}{
		{namespace: "a", want: true},
		{namespace: "b", want: false}, // an object, not a selected one
		{namespace: "", want: true},
	} {
		lists = nil
		got, err := Holds(context.Background(), c, gvk, tt.namespace, bundleLabelled)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("Holds in %q = %v, want %v", tt.namespace, got, tt.want)
		}
		want := fmt.Sprintf(`[*v1.PartialObjectMetadataList ConfigMapList ns=%q selector="limbo.dev/bundle" limit=1]`, tt.namespace)
		if fmt.Sprint(lists) != want {
			t.Errorf("requests in %q: %v, want %s", tt.namespace, lists, want)
		}
	}
}

// A scan of no namespace in particular lists every namespace at once.
func TestNamespaces(t *testing.T) {
	if got := fmt.Sprintf("%q", Namespaces(nil)); got != `[""]` {
		t.Errorf("Namespaces(nil) = %s, want every namespace", got)
	}
	if got := fmt.Sprintf("%q", Namespaces([]string{"a", "b"})); got != `["a" "b"]` {
		t.Errorf("Namespaces(a, b) = %s, want them", got)
	}
}
