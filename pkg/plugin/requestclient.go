package plugin

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// RequestClient is the client a plugin call gets as Request.Client. Its writes go
// to c. A read goes to c, the controller's cache, only when the cache holds what
// it asks for whole: a kind of cached (the plugins' Watches prototypes), in the
// form the prototype has (typed, unstructured or metadata only: the cache keeps
// one informer per form, and a read in another form would start a new,
// cluster-wide one), in a namespace the cache watches (namespaces, the
// controller's --namespaces; empty is every namespace). Every other read goes
// to live, the API server.
//
// The controller's cache holds, of any other kind, only the objects limbo
// manages (its label selector keeps memory with what limbo manages, not with
// the cluster). A plugin that listed such a kind from it would see part of its
// desired side and could take the rest for orphans; routed to the API server,
// the listing is whole. What cannot be told (a kind not in the scheme) is read
// live too.
func RequestClient(c client.Client, live client.Reader, cached []client.Object, namespaces []string) client.Client {
	r := &requestClient{Client: c, live: live, cached: map[cacheKey]bool{}, namespaces: namespaces}
	for _, obj := range cached {
		if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
			r.cached[cacheKey{gvk: gvk, form: formOf(obj)}] = true
		}
	}
	return r
}

type requestClient struct {
	client.Client
	live       client.Reader
	cached     map[cacheKey]bool
	namespaces []string
}

// form is how an object is held: the cache keeps an informer per kind and form.
type form int

const (
	typed form = iota
	unstructuredForm
	metadataForm
)

type cacheKey struct {
	gvk  schema.GroupVersionKind
	form form
}

func formOf(obj runtime.Object) form {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		return unstructuredForm
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataForm
	}
	return typed
}

func (r *requestClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.inCache(obj, false, key.Namespace) {
		return r.Client.Get(ctx, key, obj, opts...)
	}
	return r.live.Get(ctx, key, obj, opts...)
}

func (r *requestClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if r.inCache(list, true, (&client.ListOptions{}).ApplyOptions(opts).Namespace) {
		return r.Client.List(ctx, list, opts...)
	}
	return r.live.List(ctx, list, opts...)
}

// inCache reports whether the cache holds the objects of obj's kind (a list's
// item kind) in namespace ("" is every namespace) whole, in obj's form.
func (r *requestClient) inCache(obj runtime.Object, isList bool, namespace string) bool {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme())
	if err != nil {
		return false
	}
	if isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if !r.cached[cacheKey{gvk: gvk, form: formOf(obj)}] {
		return false
	}
	if len(r.namespaces) == 0 {
		return true
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, r.RESTMapper())
	if err != nil {
		return false
	}
	return !namespaced || slices.Contains(r.namespaces, namespace)
}
