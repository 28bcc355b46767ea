package bundle

import (
	"context"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// lateWatches watches the kinds plugins watch that the API server did not serve
// when the controller started — a CRD installed after limbo, as csi-baremetal's
// for node-removal — from the moment their CRD is established. Before, they were
// watched only after a restart: until then a new Drive, or an expedited item,
// waited for another event of the Bundle (a Node's, a deadline, the resync).
//
// The manager's cache cannot take them: its configuration (which kinds are
// cached whole, by which selector) is fixed when it is built, and
// controller-runtime refuses a kind without a REST mapping then. Each late kind
// gets a cache of its own, started beside the controller, whose events the
// controller watches like those of the kinds served at the start. Plugins read
// such a kind from the API server (plugin.RequestClient knows only the kinds
// cached at the start), as before.
type lateWatches struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	// newCache makes the cache of one late kind (every object of it, in the
	// controller's namespaces).
	newCache func() (cache.Cache, error)
	// watch starts the controller's watch of a source.
	watch func(source.Source) error
	// handler maps the events of a kind to the Bundles using its plugins.
	handler func(plugins []string) handler.EventHandler

	mu sync.Mutex
	// waiting are the watches of kinds not served yet, by kind.
	waiting map[schema.GroupVersionKind]plugin.Watch
	// requests carries the watches to start to Start's loop, which outlives the
	// CRD event that asks for one.
	requests chan plugin.Watch
}

func newLateWatches(scheme *runtime.Scheme, mapper meta.RESTMapper, missing []plugin.Watch) *lateWatches {
	l := &lateWatches{scheme: scheme, mapper: mapper, waiting: map[schema.GroupVersionKind]plugin.Watch{},
		requests: make(chan plugin.Watch, len(missing))}
	for _, w := range missing {
		if gvk := w.GVK(scheme); !gvk.Empty() {
			l.waiting[gvk] = w
		}
	}
	return l
}

// serving is told of crd, which serves its kinds now: the watches waiting for
// one of them are handed to Start.
func (l *lateWatches) serving(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Served {
			l.request(schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
		}
	}
}

// request hands the watch of gvk to Start if it waits, once: the channel holds
// every watch that waited at the start.
func (l *lateWatches) request(gvk schema.GroupVersionKind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.waiting[gvk]; ok {
		delete(l.waiting, gvk)
		l.requests <- w
	}
}

// Start starts the watches handed to it until ctx ends. The kinds that came to
// be served between the controller's start and the CRD informer's first list
// (whose CRDs are not passed as new) are looked up once first.
func (l *lateWatches) Start(ctx context.Context) error {
	l.mu.Lock()
	var served []schema.GroupVersionKind
	for gvk := range l.waiting {
		if _, err := l.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			served = append(served, gvk)
		}
	}
	l.mu.Unlock()
	for _, gvk := range served {
		l.request(gvk)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case w := <-l.requests:
			if err := l.start(ctx, w); err != nil {
				log.FromContext(ctx).Error(err, "could not watch a plugin's kind that is served now; it is watched after a restart", "kind", w.GVK(l.scheme).String())
			}
		}
	}
}

// start starts a cache of w's kind and the controller's watch of it.
func (l *lateWatches) start(ctx context.Context, w plugin.Watch) error {
	c, err := l.newCache()
	if err != nil {
		return err
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			log.FromContext(ctx).Error(err, "the cache of a plugin's kind stopped", "kind", w.GVK(l.scheme).String())
		}
	}()
	if err := l.watch(source.Kind[client.Object](c, w.Object, l.handler(w.Plugins))); err != nil {
		return err
	}
	log.FromContext(ctx).Info("watching a plugin's kind that the API server serves now", "kind", w.GVK(l.scheme).String(), "plugins", w.Plugins)
	return nil
}
