package controller

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/apiwarning"
	"github.com/limbo-dev/limbo/pkg/controller/bundle"
	"github.com/limbo-dev/limbo/pkg/controller/reaper"
	"github.com/limbo-dev/limbo/pkg/controller/tombstone"
	"github.com/limbo-dev/limbo/pkg/eventrecorder"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins"
	"github.com/limbo-dev/limbo/pkg/restmappings"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/sharedmeta"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// NewScheme returns the scheme limbo's clients use: the built-in kinds, CRDs and
// limbo's own kinds. Other kinds are handled as unstructured objects.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, limbov1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // the schemes are compiled in; failing to register them is a programming error
		}
	}
	return scheme
}

// gracefulShutdownTimeout bounds how long the runnables get to stop before the
// manager releases the Lease and returns: shorter than the install's
// terminationGracePeriodSeconds (30 s).
const gracefulShutdownTimeout = 20 * time.Second

// NewManager builds the manager with every limbo controller registered.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	// The API server's warnings: events for a Bundle's author, once in the log
	// for the operator, none for the scans (package apiwarning).
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, apiwarning.NewHandler()
	scheme := NewScheme()
	shardSelector, err := shard.Parse(opts.WatchLabelSelector)
	if err != nil {
		return nil, err
	}

	// Cached objects hold the metadata and strings they repeat once (sharedmeta).
	shared := sharedmeta.New()
	cacheOpts := cache.Options{
		SyncPeriod: &opts.ResyncPeriod,
		// Managed objects are watched by label, so that memory grows with what limbo
		// manages (in this shard) and not with the cluster. The Bundle's shard
		// labels are copied onto its objects and Tombstones, so the shard's selector
		// selects them too.
		DefaultLabelSelector: shardSelector.And(bundle.ManagedSelector()),
		// managedFields are most of a cached object's size; limbo keeps only a
		// digest of its own field set, which the no-op check compares. The
		// metadata that many objects carry alike is held once.
		DefaultTransform: bundle.NewCacheTransform(shared),
		ByObject: map[client.Object]cache.ByObject{
			&limbov1alpha1.Bundle{}:    {Label: shardSelector.LabelSelector(), Transform: bundle.NewBundleCacheTransform(shared)},
			&limbov1alpha1.Tombstone{}: {Label: shardSelector.LabelSelector()},
			// Readiness rules are stated on CRDs; a CRD that starts serving a kind
			// passes the Bundles naming it. Only what those read is kept.
			&apiextensionsv1.CustomResourceDefinition{}: {Label: everything(), Transform: bundle.TrimCRDForCache},
		},
	}
	cacheOpts.DefaultNamespaces = bundle.NamespaceConfigs(opts.Namespaces)
	// Metrics are registered here, with the registry the manager's /metrics
	// serves, and not at package init.
	metrics := NewMetrics(ctrlmetrics.Registry)
	registry := opts.Plugins
	if registry == nil {
		if registry, err = plugins.NewRegistry(plugins.Options{
			NamespaceGCInterval: opts.NamespaceGCInterval,
			NamespaceGCDelay:    opts.NamespaceGCDelay,
			Metrics:             ctrlmetrics.Registry,
		}); err != nil {
			return nil, err
		}
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := restmappings.Remember(func() (meta.RESTMapper, error) { return apiutil.NewDynamicRESTMapper(cfg, httpClient) })
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper.Listed = restmappings.ListedBy(disco)
	watches, missing := registry.ServedWatches(scheme, mapper)
	for _, w := range missing {
		ctrl.Log.Info("not watching a plugin's kind yet: the API server does not serve it (its plugin reports the missing kind when it runs; the watch starts once its CRD is established)",
			"kind", w.GVK(scheme).String())
	}
	// The kinds plugins watch are cached whole; of every other kind the cache
	// holds only what limbo manages, so plugins read those from the API server
	// (plugin.RequestClient).
	var cachedWhole []client.Object
	for _, w := range watches {
		cacheOpts.ByObject[w.Object] = cache.ByObject{Label: everything()}
		cachedWhole = append(cachedWhole, w.Object)
	}
	mgrOpts := manager.Options{
		// One manager never holds two controllers of a name; the process-wide name
		// check would only forbid building a manager again (a restart in-process).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Scheme:     scheme,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			return mapper, nil
		},
		Cache: cacheOpts,
		// Managed objects are unstructured: without this, every read of one would go
		// to the API server instead of the cache.
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.ProbeAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           &opts.LeaseDuration,
		RenewDeadline:           &opts.RenewDeadline,
		RetryPeriod:             &opts.RetryPeriod,
		// Every runnable stops with the context, so a replica that is shut down
		// hands over at once instead of after the lease duration — provided it
		// releases the Lease before the kubelet's SIGKILL: the install's grace
		// period is 30 s.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(gracefulShutdownTimeout),
	}
	if opts.PprofAddr != "" {
		mgrOpts.PprofBindAddress = opts.PprofAddr
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if opts.LeaderElect {
		if err := checkLeaseNamespace(mgr.GetAPIReader(), opts.LeaderElectionNamespace, opts.LeaderElectionID); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", informersSynced(mgr.GetCache(), &limbov1alpha1.Bundle{}, &limbov1alpha1.Tombstone{})); err != nil {
		return nil, err
	}
	// Writes of a Bundle's objects impersonate its ServiceAccount; everything else
	// (and every read) is limbo's.
	writer := impersonation.NewClient(mgr.GetClient(), mgr.GetAPIReader(), cfg)
	pluginClient := plugin.RequestClient(writer, mgr.GetAPIReader(), cachedWhole, opts.Namespaces)
	coreClient, err := corev1client.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	// The one events recorder of every controller (the engine, the Bundle and
	// Tombstone controllers): core/v1 events, which `kubectl describe` shows and
	// kubectl's events/v1 reads too, correlated so that they stay an audit trail
	// (pkg/eventrecorder, docs/design-decisions.md). Not the manager's, whose
	// correlator merges and drops an object's events.
	recorder, stopEvents := eventrecorder.New(coreClient.Events(""), mgr.GetScheme(), "limbo", ctrl.Log.WithName("events"), metrics.EventsDropped)
	engine := &softdelete.Engine{
		Client:   writer,
		Reader:   mgr.GetAPIReader(),
		Recorder: recorder,
		Clock:    clock.RealClock{},
		Metrics:  metrics.Engine,
		Shard:    shardSelector,
	}
	reap := reaper.New(mgr.GetClient(), mgr.GetAPIReader(), disco, engine, opts.ResyncPeriod)
	reap.Namespaces = opts.Namespaces
	reap.Shard = shardSelector
	bundles, err := bundle.SetupWithManager(mgr, bundle.Options{Workers: opts.Workers, ApplyConcurrency: opts.ApplyConcurrency, Engine: engine, Plugins: registry, OnManagedObjectEvent: reap.Observe, OnHoldEnded: reap.Poke, OnSpecPassed: reap.SpecPassed, Shard: shardSelector,
		Client: writer, PluginClient: pluginClient, DefaultServiceAccount: opts.DefaultServiceAccount, Metrics: metrics.Bundles, Discovery: disco, Namespaces: opts.Namespaces,
		PluginWatches: &bundle.PluginWatches{Served: watches, Missing: missing}, PluginEventInterval: opts.PluginEventInterval})
	if err != nil {
		return nil, err
	}
	if err := tombstone.SetupWithManager(mgr, writer, pluginClient, opts.DefaultServiceAccount, registry, engine, opts.Workers); err != nil {
		return nil, err
	}
	reap.OnKind = bundles.EnsureWatch
	metrics.Status.SetReader(mgr.GetCache())
	if err := mgr.Add(reap); err != nil {
		return nil, err
	}
	return &withEvents{Manager: mgr, stopEvents: stopEvents}, nil
}

// withEvents is the manager, whose Start stops limbo's events broadcaster once
// every runnable has stopped: the manager stops only the broadcaster it made.
type withEvents struct {
	manager.Manager
	stopEvents func()
}

func (m *withEvents) Start(ctx context.Context) error {
	defer m.stopEvents()
	return m.Manager.Start(ctx)
}

// informersSynced is the readiness check: the informers of objs, limbo's own
// kinds, have synced. Not every informer of the cache: those of the kinds
// Bundles declare start as Bundles name them, and one of a kind the controller
// may not list never syncs (its Bundles report it); waiting for every informer
// would keep the replica unready for as long as one such Bundle exists.
func informersSynced(c cache.Cache, objs ...client.Object) healthz.Checker {
	return func(req *http.Request) error {
		for _, obj := range objs {
			informer, err := c.GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return err
			}
			if !informer.HasSynced() {
				return fmt.Errorf("the informer of %T has not synced", obj)
			}
		}
		return nil
	}
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := NewManager(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// checkLeaseNamespace fails when the Lease's namespace does not exist, or when
// the controller may not read its Lease there (no Role in that namespace): the
// election would retry forever, and the replica would look ready while it never
// reconciles. A namespace it may not read, or a read that fails otherwise, is
// left to the election to report.
func checkLeaseNamespace(reader client.Reader, namespace, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := reader.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("leader election: namespace %q does not exist; create it, choose another with --leader-election-namespace, or run a single replica with --leader-elect=false", namespace)
	}
	err = reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &coordinationv1.Lease{})
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("leader election: the controller may not read its Lease %s/%s (%w); grant it get, create and update on leases there (the Role limbo-leader-election of build/deploy/rbac.yaml), or choose the namespace that has it with --leader-election-namespace", namespace, name, err)
	}
	return nil
}

func everything() labels.Selector { return labels.Everything() }
