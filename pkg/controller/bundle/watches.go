package bundle

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// watcher starts a watch per kind that Bundles use, the first time one does.
// The cache selects objects by the limbo.dev/bundle label (see ManagedSelector),
// so memory grows with what limbo manages, not with the cluster.
type watcher struct {
	cache      cache.Cache
	controller controller.Controller
	// onEvent is also told of every event, for the reaper; onDelete of every
	// deletion.
	onEvent, onDelete func(client.Object)
	// inTheWay, when set, names the Bundles an object was in the way of, which
	// its events wake too (see bundlesOf).
	inTheWay *objectsInTheWay

	// syncTimeout is how long after the watch of a kind starts its cache may
	// take to sync (0: the package's syncTimeout).
	syncTimeout time.Duration

	mu sync.Mutex
	// watched holds when the watch of each kind started.
	watched map[schema.GroupVersionKind]time.Time
}

// bundleIndex indexes cached objects by their limbo.dev/bundle label: a pass
// lists its Bundle's objects through it, in time that grows with the Bundle, not
// with every object of the kind in the namespace (which a label selector scans).
const bundleIndex = "label:" + limbov1alpha1.LabelBundle

// adoptionIndex indexes cached Bundles by the objects their templates declare to
// adopt (bundlespec.AdoptionKeys): a pass about to delete an orphan hands it over
// to such a Bundle instead.
const adoptionIndex = "adopts"

// adoptionKeys is the adoptionIndex of a Bundle.
func adoptionKeys(o client.Object) []string {
	return bundlespec.AdoptionKeys(o.(*limbov1alpha1.Bundle))
}

func bundleLabel(obj client.Object) []string {
	if name := obj.GetLabels()[limbov1alpha1.LabelBundle]; name != "" {
		return []string{name}
	}
	return nil
}

// syncTimeout bounds how long the cache of a kind may take to sync once its
// watch started. A kind the controller may not list never syncs, and a cache
// read of it would wait for good, holding a worker; past the timeout the
// resource is in Error and its Bundle retried with backoff.
const syncTimeout = 10 * time.Second

// ensure starts watching gvk, with its objects indexed by bundleIndex, unless it
// already does, and waits until the cache of gvk has synced — at most until
// syncTimeout after the watch started: after it, cache reads of gvk do not
// wait. A kind that has not synced by then fails at once: the passes of many
// Bundles of a kind the controller cannot list would otherwise each hold a
// worker for the timeout, again at every retry, and starve every other Bundle
// (deletions due included).
func (w *watcher) ensure(ctx context.Context, gvk schema.GroupVersionKind) error {
	started, err := w.start(gvk)
	if err != nil {
		return err
	}
	inf, err := w.informer(ctx, gvk)
	if err != nil {
		return err
	}
	if inf.HasSynced() {
		return nil
	}
	timeout := cmp.Or(w.syncTimeout, syncTimeout)
	ctx, cancel := context.WithDeadline(ctx, started.Add(timeout))
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the controller's cache of %s has not synced within %s: can the controller list and watch %s? (its log says why)",
			gvk.Kind, timeout, gvk.GroupKind())
	}
	return nil
}

// informer returns the cache's informer of gvk (the one ensure starts) without
// waiting for it to sync.
func (w *watcher) informer(ctx context.Context, gvk schema.GroupVersionKind) (cache.Informer, error) {
	return w.cache.GetInformer(ctx, cachedObject(gvk), cache.BlockUntilSynced(false))
}

// start starts watching gvk unless it already does, and returns when the
// watch started.
func (w *watcher) start(gvk schema.GroupVersionKind) (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if started, ok := w.watched[gvk]; ok {
		return started, nil
	}
	obj := cachedObject(gvk)
	// The informer may run already (a read started it): an index added late
	// indexes what it holds.
	if err := w.cache.IndexField(context.Background(), obj, bundleIndex, bundleLabel); err != nil {
		return time.Time{}, fmt.Errorf("index %s by %s: %w", gvk.Kind, limbov1alpha1.LabelBundle, err)
	}
	enqueue := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return w.bundlesOf(gvk.GroupKind(), obj)
	})
	events := handler.Funcs{
		CreateFunc:  enqueue.Create,
		UpdateFunc:  enqueue.Update,
		GenericFunc: enqueue.Generic,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if w.onDelete != nil {
				w.onDelete(e.Object)
			}
			enqueue.Delete(ctx, e, q)
		},
	}
	if err := w.controller.Watch(source.Kind[client.Object](w.cache, obj, events)); err != nil {
		return time.Time{}, err
	}
	started := time.Now()
	w.watched[gvk] = started
	return started, nil
}

// forget stops watching every version of gk, a kind no longer served: the next
// ensure of one of them watches it afresh. Holding the lock keeps a concurrent
// start from adding its watch to the informer being removed.
func (w *watcher) forget(ctx context.Context, gk schema.GroupKind) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for gvk := range w.watched {
		if gvk.GroupKind() != gk {
			continue
		}
		delete(w.watched, gvk)
		if err := w.cache.RemoveInformer(ctx, cachedObject(gvk)); err != nil {
			log.FromContext(ctx).Error(err, "stop watching a kind no longer served", "kind", gvk.String())
		}
	}
}

// syncedKinds returns the kinds watched so far, for any Bundle, whose
// informers have synced (none by a nil watcher). A cache List of a kind that
// has not synced waits until it does — forever, for a kind the controller may
// not list — so the kinds a pass lists for other Bundles' sake (see
// withWatchedKinds) must be synced ones.
func (w *watcher) syncedKinds(ctx context.Context) []schema.GroupVersionKind {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	watched := make([]schema.GroupVersionKind, 0, len(w.watched))
	for gvk := range w.watched {
		watched = append(watched, gvk)
	}
	w.mu.Unlock()
	out := watched[:0]
	for _, gvk := range watched {
		if inf, err := w.informer(ctx, gvk); err == nil && inf.HasSynced() {
			out = append(out, gvk)
		}
	}
	return out
}

// bundlesOf maps a managed object of kind gk to the Bundle named by its label
// — the Bundle that manages it, or a Bundle of that name that may adopt it —
// and to the Bundles it was last found in the way of: a Bundle that declares
// it to adopt it (limbo.dev/adopt) while another controls it adopts it as soon
// as the other lets it go (a teardown's release, a hand-over) or creates it
// once it is gone, not at its next recheck.
func (w *watcher) bundlesOf(gk schema.GroupKind, obj client.Object) []reconcile.Request {
	if w.onEvent != nil {
		w.onEvent(obj)
	}
	var reqs []reconcile.Request
	if name := obj.GetLabels()[limbov1alpha1.LabelBundle]; name != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}})
	}
	if w.inTheWay != nil {
		for _, name := range w.inTheWay.awaiting(obj.GetNamespace(), bundlespec.ObjectKey(gk, obj.GetName())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: name})
		}
	}
	return reqs
}
