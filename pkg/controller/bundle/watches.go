package bundle

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// watcher starts a watch per kind that Bundles use, the first time one does.
// The cache selects objects by the limbo.dev/bundle label (see ManagedSelector),
// so memory grows with what limbo manages, not with the cluster.
type watcher struct {
	cache      cache.Cache
	controller controller.Controller
	// onEvent is also told of every event, for the reaper.
	onEvent func(client.Object)

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// ensure starts watching gvk unless it already does.
func (w *watcher) ensure(gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gvk] {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := w.controller.Watch(source.Kind[client.Object](w.cache, u, handler.EnqueueRequestsFromMapFunc(w.bundleOf))); err != nil {
		return err
	}
	w.watched[gvk] = true
	return nil
}

// bundleOf maps a managed object to the Bundle named by its label: the Bundle that
// manages it, or a Bundle of that name that may adopt it.
func (w *watcher) bundleOf(_ context.Context, obj client.Object) []reconcile.Request {
	if w.onEvent != nil {
		w.onEvent(obj)
	}
	name := obj.GetLabels()[limbov1alpha1.LabelBundle]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}
