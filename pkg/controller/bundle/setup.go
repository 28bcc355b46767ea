package bundle

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller/retry"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Options tune the reconciler.
type Options struct {
	Workers int
	// ApplyConcurrency bounds the objects of one Bundle applied at once: the
	// resources of a dependency wave are independent of each other.
	ApplyConcurrency int
	Plugins          *plugin.Registry
	Engine           *softdelete.Engine
	// OnManagedObjectEvent is told of every event on a managed object (the reaper
	// listens for objects released to limbo).
	OnManagedObjectEvent func(client.Object)
	// OnHoldEnded is told when the reaper's hold on released objects may have
	// ended: a teardown let its Bundle go (the reaper leaves the objects a
	// teardown released alone while their Bundle is there), or a pass made a
	// plugin resource Ready (its generated objects released by an earlier Bundle
	// of the name are held until then). The reaper looks at them again at once
	// instead of at its next re-check.
	OnHoldEnded func()
	// OnSpecPassed is told of a Bundle whose status now observes a new
	// generation: a released object the reaper leaves to that Bundle, declared
	// and not adopted or declared to adopt, may be the reaper's again (the new
	// spec dropped it), and the reaper looks at once rather than at its next
	// re-check.
	OnSpecPassed func(client.ObjectKey)
	// Shard is the controller's shard; its label keys are copied from a Bundle
	// onto the objects it applies (nil: every Bundle, nothing to copy).
	Shard *shard.Selector
	// Client replaces the manager's client: an impersonation.Client writes a
	// Bundle's objects as its ServiceAccount.
	Client client.Client
	// PluginClient is the plugins' Request.Client (Reconciler.PluginClient).
	PluginClient client.Client
	// DefaultServiceAccount is impersonated for Bundles that name none.
	DefaultServiceAccount string
	// Metrics record the Bundles' resources by state (nil: recorded, not served).
	Metrics *Metrics
	// Discovery names the kinds scanned at start for objects of Bundles (see
	// startScan); nil scans nothing.
	Discovery limboscan.Discovery
	// Namespaces are the controller's, for that scan; empty is every namespace.
	Namespaces []string
	// PluginWatches are the plugins' watches split by whether the API server
	// served their kinds when the manager's cache was built (which caches the
	// served ones whole); nil: split here.
	PluginWatches *PluginWatches
	// PluginEventInterval is the shortest time between two passes of a Bundle
	// that events of its plugins' watched kinds and of its Tombstones bring
	// (see pluginEventPacer); 0 runs a pass at every event.
	PluginEventInterval time.Duration
}

// PluginWatches are plugin.Registry.ServedWatches' answer.
type PluginWatches struct {
	Served, Missing []plugin.Watch
}

// ManagedSelector selects the objects a Bundle manages or last managed: those
// labelled with a Bundle's name, but the endpoint controllers' copies of a
// Service's labels (limboscan.NotEndpointCopies).
func ManagedSelector() labels.Selector {
	req, err := labels.NewRequirement(limbov1alpha1.LabelBundle, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid requirement
	}
	return labels.NewSelector().Add(*req).Add(limboscan.NotEndpointCopies()...)
}

// bundleChanged passes Bundle events that need a pass: a new spec, a deletion,
// changed finalizers, or the informer's periodic resync (the same version
// delivered again: --resync-period's safety net). It drops limbo's own status
// writes.
var bundleChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetResourceVersion() == n.GetResourceVersion() ||
			o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			len(o.GetFinalizers()) != len(n.GetFinalizers())
	},
}

// SetupWithManager registers the Bundle reconciler and returns it.
func SetupWithManager(mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	r := &Reconciler{
		Client:       opts.Client,
		PluginClient: opts.PluginClient,
		APIReader:    mgr.GetAPIReader(),
		Mapper:       mgr.GetRESTMapper(),
		Recorder:     opts.Engine.Recorder, // one recorder for every controller (see NewManager)
		Engine:       opts.Engine,
		Plugins:      opts.Plugins,
		Clock:        clock.RealClock{},
		Metrics:      opts.Metrics,
		Shard:        opts.Shard,

		DefaultServiceAccount: opts.DefaultServiceAccount,
		ApplyConcurrency:      opts.ApplyConcurrency,
		OnHoldEnded:           opts.OnHoldEnded,
		OnSpecPassed:          opts.OnSpecPassed,
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Metrics == nil {
		r.Metrics = NewMetrics(nil)
	}
	callsDone := make(chan event.GenericEvent, 1024)
	r.plans = newBackgroundCalls[*plugin.Result](callsDone, r.forgetPluginState)
	r.teardowns = newBackgroundCalls[*plugin.TeardownResult](callsDone, r.forgetPluginState)
	r.alarms = newAlarms(callsDone)
	pacer := newPluginEventPacer(opts.PluginEventInterval)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("bundle").
		// The first predicate only records (and passes every event): the cascade
		// mode of a deleted Bundle, which its later events no longer show.
		For(&limbov1alpha1.Bundle{}, builder.WithPredicates(r.cascades.predicate(), r.bundleLeft(), bundleChanged)).
		// A Tombstone's progress (attempts, lastError, gone) shows in
		// pendingDeletions: paced, as a plugin's watched kinds are — a pass
		// plans again, and a mass deletion's attempts came several a second.
		// The Tombstone controller keeps the deadlines; the passes only report.
		Watches(&limbov1alpha1.Tombstone{}, pacer.handler(bundleOfTombstone)).
		// A plugin call that outlasted its pass triggers the next one, as does
		// the deadline of a pass that failed (alarms).
		WatchesRawSource(source.Channel(callsDone, &handler.EnqueueRequestForObject{})).
		// A Bundle that names a kind not served yet is a spec error no retry
		// fixes (UnknownKind), until its CRD is established: Helm, Flux and
		// `kubectl apply -f dir/` create a CRD and the Bundles using it together.
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.bundlesNamingKindOf),
			builder.WithPredicates(crdServing)).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.kindGone),
			builder.WithPredicates(crdStopsServing)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, RateLimiter: retry.RateLimiter()}).
		Build(r)
	if err != nil {
		return nil, err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &limbov1alpha1.Bundle{}, adoptionIndex, adoptionKeys); err != nil {
		return nil, fmt.Errorf("index Bundles by the objects they adopt: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &limbov1alpha1.Bundle{}, pluginIndex, pluginNames); err != nil {
		return nil, fmt.Errorf("index Bundles by the plugins they use: %w", err)
	}
	r.watcher = &watcher{cache: mgr.GetCache(), controller: c, onEvent: opts.OnManagedObjectEvent, watched: map[schema.GroupVersionKind]time.Time{},
		onDelete: r.objectDeleted, inTheWay: &r.inTheWay}
	r.Discovery = opts.Discovery
	if opts.Discovery != nil {
		r.startScan = &startScan{discovery: opts.Discovery, reader: mgr.GetAPIReader(), namespaces: opts.Namespaces,
			selector: opts.Shard.And(ManagedSelector()), watch: r.watcher.ensure,
			backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)}
		if err := mgr.Add(r.startScan); err != nil {
			return nil, err
		}
	}
	if opts.Plugins != nil {
		split := opts.PluginWatches
		if split == nil {
			split = &PluginWatches{}
			split.Served, split.Missing = opts.Plugins.ServedWatches(mgr.GetScheme(), mgr.GetRESTMapper())
		}
		watches, missing := split.Served, split.Missing
		byPlugins := func(plugins []string) handler.EventHandler {
			return pacer.handler(r.bundlesUsing(plugins))
		}
		for _, w := range watches {
			if err := c.Watch(source.Kind[client.Object](mgr.GetCache(), w.Object, byPlugins(w.Plugins))); err != nil {
				return nil, err
			}
		}
		if len(missing) > 0 {
			late := newLateWatches(mgr.GetScheme(), missing)
			late.watch, late.handler = c.Watch, byPlugins
			late.newCache = func() (cache.Cache, error) {
				return cache.New(mgr.GetConfig(), cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
					DefaultNamespaces: NamespaceConfigs(opts.Namespaces), DefaultTransform: TrimForCache})
			}
			if err := c.Watch(source.Kind[client.Object](mgr.GetCache(), &apiextensionsv1.CustomResourceDefinition{}, late.crdEvents())); err != nil {
				return nil, err
			}
			if err := mgr.Add(late); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// NamespaceConfigs is a cache's DefaultNamespaces for namespaces (nil: every
// namespace).
func NamespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// EnsureWatch makes the reconciler watch objects of gvk (the reaper uses it for
// kinds it finds in limbo after a restart).
func (r *Reconciler) EnsureWatch(gvk schema.GroupVersionKind) error {
	return r.watcher.ensure(context.Background(), gvk)
}

// bundlesUsing maps any event to the Bundles that hold a resource of one of
// plugins, found through pluginIndex: every event of every kind a compiled-in
// plugin watches (each Node's, each Namespace's) asks, and listing every
// Bundle cost 1–2 ms and 1 MB an event at 2,000 Bundles, whether or not a Bundle
// uses the plugin.
func (r *Reconciler) bundlesUsing(plugins []string) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		seen := map[reconcile.Request]bool{}
		var out []reconcile.Request
		for _, name := range plugins {
			var bundles limbov1alpha1.BundleList
			if err := r.Client.List(ctx, &bundles, client.MatchingFields{pluginIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
				// A map function cannot return an error; the resync is the safety net.
				log.FromContext(ctx).Error(err, "list Bundles to trigger for a plugin's watch", "plugin", name)
				continue
			}
			for i := range bundles.Items {
				req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&bundles.Items[i])}
				if !seen[req] {
					seen[req] = true
					out = append(out, req)
				}
			}
		}
		return out
	}
}

// pluginIndex indexes cached Bundles by the names of the plugins their
// resources use (bundlesUsing).
const pluginIndex = "plugins"

// pluginNames is the pluginIndex of a Bundle.
func pluginNames(o client.Object) []string {
	var names []string
	for _, res := range o.(*limbov1alpha1.Bundle).Spec.Resources {
		if res.Plugin != nil && !slices.Contains(names, res.Plugin.Name) {
			names = append(names, res.Plugin.Name)
		}
	}
	return names
}

// bundleOfTombstone maps a Tombstone to the Bundle that controls it, as
// controller-runtime's Owns does.
func bundleOfTombstone(_ context.Context, obj client.Object) []reconcile.Request {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "Bundle" {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(owner.APIVersion); err != nil || gv.Group != limbov1alpha1.GroupVersion.Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}}}
}
