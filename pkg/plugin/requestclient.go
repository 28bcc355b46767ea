package plugin

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// RequestClient is the client a plugin call gets as Request.Client. Its writes go
// to c; its reads go to c only for the kinds cached reports the controller's
// cache holds whole — the kinds plugins watch (Description.Watches) — and to live,
// the API server, for every other kind.
//
// The controller's cache holds, of any other kind, only the objects limbo
// manages (its label selector keeps memory with what limbo manages, not with
// the cluster). A plugin that listed such a kind from it would see part of its
// desired side and could take the rest for orphans; routed to the API server,
// the listing is whole. A kind whose GVK cannot be told (not in the scheme) is
// read live too.
func RequestClient(c client.Client, live client.Reader, cached func(schema.GroupVersionKind) bool) client.Client {
	return &requestClient{Client: c, live: live, cached: cached}
}

type requestClient struct {
	client.Client
	live   client.Reader
	cached func(schema.GroupVersionKind) bool
}

func (r *requestClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.inCache(obj, false) {
		return r.Client.Get(ctx, key, obj, opts...)
	}
	return r.live.Get(ctx, key, obj, opts...)
}

func (r *requestClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if r.inCache(list, true) {
		return r.Client.List(ctx, list, opts...)
	}
	return r.live.List(ctx, list, opts...)
}

// inCache reports whether obj's kind (a list's item kind) is cached whole.
func (r *requestClient) inCache(obj runtime.Object, isList bool) bool {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme())
	if err != nil {
		return false
	}
	if isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return r.cached(gvk)
}
