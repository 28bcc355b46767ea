package bundle

import (
	"context"
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
type lateWatches struct {
	scheme *runtime.Scheme
	// newCache makes the cache of one late kind (every object of it, in the
	// controller's namespaces).
	newCache func() (cache.Cache, error)
	// watch starts the controller's watch of a source.
	watch func(source.Source) error
	// handler maps the events of a kind to the Bundles using its plugins.
	handler func(plugins []string) handler.EventHandler

	mu sync.Mutex
	// ctx is Start's, once it runs: the caches live in it.
	ctx context.Context
	// waiting are the watches of kinds not served; served, those whose kinds
	// are served and that wait for Start; running, those started, with the
	// cancel of their cache.
	waiting map[schema.GroupVersionKind]plugin.Watch
	served  []plugin.Watch
	running map[schema.GroupVersionKind]runningWatch
}

type runningWatch struct {
	watch plugin.Watch
	stop  context.CancelFunc
}

func newLateWatches(scheme *runtime.Scheme, missing []plugin.Watch) *lateWatches {
	l := &lateWatches{scheme: scheme, waiting: map[schema.GroupVersionKind]plugin.Watch{}, running: map[schema.GroupVersionKind]runningWatch{}}
	for _, w := range missing {
		if gvk := w.GVK(scheme); !gvk.Empty() {
			l.waiting[gvk] = w
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
// again); a waiting one of a version served starts.
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
	for gvk, r := range l.running {
		if gvk.Group == crd.Spec.Group && gvk.Kind == crd.Spec.Names.Kind && !served[gvk.Version] {
			r.stop()
			delete(l.running, gvk)
			l.waiting[gvk] = r.watch
			log.FromContext(l.ctx).Info("stopped watching a plugin's kind that the API server no longer serves", "kind", gvk.String())
		}
	}
	for version, on := range served {
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
		if w, ok := l.waiting[gvk]; ok && on {
			delete(l.waiting, gvk)
			l.served = append(l.served, w)
		}
	}
	l.startServedLocked()
}

// Start lets the watches start, now and as their kinds come to be served, until
// ctx ends.
func (l *lateWatches) Start(ctx context.Context) error {
	l.mu.Lock()
	l.ctx = ctx
	l.startServedLocked()
	l.mu.Unlock()
	<-ctx.Done()
	return nil
}

// startServedLocked starts the served watches, once Start runs.
func (l *lateWatches) startServedLocked() {
	if l.ctx == nil {
		return
	}
	for _, w := range l.served {
		gvk := w.GVK(l.scheme)
		stop, err := l.start(w)
		if err != nil {
			log.FromContext(l.ctx).Error(err, "could not watch a plugin's kind that is served now; it is tried again when its CRD changes", "kind", gvk.String())
			l.waiting[gvk] = w
			continue
		}
		l.running[gvk] = runningWatch{watch: w, stop: stop}
		log.FromContext(l.ctx).Info("watching a plugin's kind that the API server serves now", "kind", gvk.String(), "plugins", w.Plugins)
	}
	l.served = nil
}

// start starts a cache of w's kind and the controller's watch of it; stop
// stops the cache.
func (l *lateWatches) start(w plugin.Watch) (stop context.CancelFunc, err error) {
	c, err := l.newCache()
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(l.ctx)
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
