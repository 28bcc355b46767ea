package controller

import (
	"context"
	"fmt"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller/bundle"
	"github.com/limbo-dev/limbo/pkg/controller/reaper"
	"github.com/limbo-dev/limbo/pkg/controller/tombstone"
	"github.com/limbo-dev/limbo/pkg/plugins"
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

// NewManager builds the manager with every limbo controller registered.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	scheme := NewScheme()

	cacheOpts := cache.Options{
		SyncPeriod: &opts.ResyncPeriod,
		// Managed objects are watched by label, so that memory grows with what limbo
		// manages and not with the cluster. limbo's own kinds are watched whole.
		DefaultLabelSelector: bundle.ManagedSelector(),
		// managedFields are most of a cached object's size; limbo keeps only a
		// digest of its own field set, which the no-op check compares.
		DefaultTransform: bundle.TrimForCache,
		ByObject: map[client.Object]cache.ByObject{
			&limbov1alpha1.Bundle{}:    {Label: everything(), Transform: cache.TransformStripManagedFields()},
			&limbov1alpha1.Tombstone{}: {Label: everything()},
			// Readiness rules are stated on CRDs.
			&apiextensionsv1.CustomResourceDefinition{}: {Label: everything()},
		},
	}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	registry := opts.Plugins
	if registry == nil {
		var err error
		if registry, err = plugins.NewRegistry(plugins.Options{
			NamespaceGCInterval: opts.NamespaceGCInterval,
			NamespaceGCDelay:    opts.NamespaceGCDelay,
		}); err != nil {
			return nil, err
		}
	}
	for _, w := range registry.Watches() {
		cacheOpts.ByObject[w.Object] = cache.ByObject{Label: everything()}
	}
	mgrOpts := manager.Options{
		// One manager never holds two controllers of a name; the process-wide name
		// check would only forbid building a manager again (a restart in-process).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Scheme:     scheme,
		Cache:      cacheOpts,
		// Managed objects are unstructured: without this, every read of one would go
		// to the API server instead of the cache.
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	if opts.PprofAddr != "" {
		mgrOpts.PprofBindAddress = opts.PprofAddr
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informers not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	engine := &softdelete.Engine{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorderFor("limbo"), //nolint:staticcheck // core/v1 events keep kubectl describe readable
		Clock:    clock.RealClock{},
		Metrics:  softdelete.DefaultMetrics,
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	reap := reaper.New(mgr.GetClient(), mgr.GetAPIReader(), disco, engine, opts.ResyncPeriod)
	reap.Namespaces = opts.Namespaces
	bundles, err := bundle.SetupWithManager(mgr, bundle.Options{Workers: opts.Workers, Engine: engine, Plugins: registry, OnManagedObjectEvent: reap.Observe})
	if err != nil {
		return nil, err
	}
	if err := tombstone.SetupWithManager(mgr, registry, engine, opts.Workers); err != nil {
		return nil, err
	}
	reap.OnKind = bundles.EnsureWatch
	if err := mgr.Add(reap); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := NewManager(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func everything() labels.Selector { return labels.Everything() }
