package bundle

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
// cached at the start), as before. A kind whose CRD stops serving it has its
// cache stopped and waits again, so that a CRD installed anew is watched anew.
//
// The controller's Watch waits while the controller starts: it holds its lock
// until its sources have synced, and the CRD informer's first list, whose
// events call serves, is one of them. So serves only records what is served
// and wakes Start's goroutine, which starts the watches without holding the
// lock serves takes; a CRD established before the controller started (a
// standby replica that takes the lease after csi-baremetal was installed) once
// held that first list, and so the controller's start, until its sync timeout.
type lateWatches struct {
	scheme *runtime.Scheme
	// newCache makes the cache of one late kind (every object of it, in the
	// controller's namespaces).
	newCache func() (cache.Cache, error)
	// watch starts the controller's watch of a source.
	watch func(source.Source) error
	// handler maps the events of a kind to the Bundles using its plugins.
	handler func(plugins []string) handler.EventHandler
	// wake tells Start's goroutine that a kind came to be served.
	wake chan struct{}

	mu      sync.Mutex
	watches map[schema.GroupVersionKind]*lateWatch
}

// lateWatch is the watch of one kind not served at the start.
type lateWatch struct {
	watch plugin.Watch
	// served: a CRD serves its kind now, and it runs or is to start (once it
	// failed to start, it waits for its CRD to change).
	served bool
	// stop stops its cache; nil while it does not run.
	stop context.CancelFunc
}

func newLateWatches(scheme *runtime.Scheme, missing []plugin.Watch) *lateWatches {
	l := &lateWatches{scheme: scheme, wake: make(chan struct{}, 1), watches: map[schema.GroupVersionKind]*lateWatch{}}
	for _, w := range missing {
		if gvk := w.GVK(scheme); !gvk.Empty() {
			l.watches[gvk] = &lateWatch{watch: w}
		}
	}
	return l
}

// crdEvents is the handler of CRD events that starts and stops the late
// watches: an established CRD serves its versions' kinds (the CRDs of the
// informer's first list too, for a CRD established between the manager's
// build and that list), a deleted one serves none, and an update serves the
// versions the new object does. It enqueues nothing.
func (l *lateWatches) crdEvents() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			l.serves(e.Object, true)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			l.serves(e.ObjectNew, true)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			l.serves(e.Object, false)
		},
	}
}

// serves brings the watches of obj's kinds (obj a CRD) in line with the
// versions it serves: none when it is not established, is being deleted or
// exists no more. A running watch of a version not served stops (its kind waits
// again); one of a version served now is to start (Start's goroutine does).
func (l *lateWatches) serves(obj client.Object, exists bool) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	served := map[string]bool{}
	if exists && established(crd) && crd.DeletionTimestamp == nil {
		for _, v := range crd.Spec.Versions {
			served[v.Name] = v.Served
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for gvk, w := range l.watches {
		if gvk.Group != crd.Spec.Group || gvk.Kind != crd.Spec.Names.Kind || w.served == served[gvk.Version] {
			continue
		}
		w.served = served[gvk.Version]
		switch {
		case w.served:
			select {
			case l.wake <- struct{}{}:
			default: // woken already
			}
		case w.stop != nil:
			w.stop()
			w.stop = nil
			log.Log.Info("stopped watching a plugin's kind that the API server no longer serves", "kind", gvk.String())
		}
	}
}

// Start starts the watches of the kinds served, now and as they come to be,
// until ctx ends; their caches end with it.
func (l *lateWatches) Start(ctx context.Context) error {
	for {
		l.startServed(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-l.wake:
		}
	}
}

// startServed starts, one by one, the watches whose kinds are served and that
// do not run. The start is made without the lock (see lateWatches): a kind no
// longer served by the time it ran has its cache stopped again.
func (l *lateWatches) startServed(ctx context.Context) {
	for ctx.Err() == nil {
		gvk, w := l.nextToStart()
		if w == nil {
			return
		}
		stop, err := l.start(ctx, w.watch)
		l.mu.Lock()
		switch {
		case err != nil:
			w.served = false // tried again when its CRD changes
			log.FromContext(ctx).Error(err, "could not watch a plugin's kind that is served now; it is tried again when its CRD changes", "kind", gvk.String())
		case !w.served:
			stop()
		default:
			w.stop = stop
			log.FromContext(ctx).Info("watching a plugin's kind that the API server serves now", "kind", gvk.String(), "plugins", w.watch.Plugins)
		}
		l.mu.Unlock()
	}
}

// nextToStart is the first watch, by kind, that is served and does not run;
// nil when there is none.
func (l *lateWatches) nextToStart() (schema.GroupVersionKind, *lateWatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, gvk := range slices.SortedFunc(maps.Keys(l.watches), func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) }) {
		if w := l.watches[gvk]; w.served && w.stop == nil {
			return gvk, w
		}
	}
	return schema.GroupVersionKind{}, nil
}

// start starts a cache of w's kind and the controller's watch of it; stop
// stops the cache.
func (l *lateWatches) start(ctx context.Context, w plugin.Watch) (stop context.CancelFunc, err error) {
	c, err := l.newCache()
	if err != nil {
		return nil, err
	}
	ctx, stop = context.WithCancel(ctx)
	go func() {
		if err := c.Start(ctx); err != nil {
			log.FromContext(ctx).Error(err, "the cache of a plugin's kind stopped", "kind", w.GVK(l.scheme).String())
		}
	}()
	if err := l.watch(source.Kind[client.Object](c, w.Object, l.handler(w.Plugins))); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
