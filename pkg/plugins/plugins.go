package plugins

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
	"github.com/limbo-dev/limbo/pkg/plugins/routegc"
	"github.com/limbo-dev/limbo/pkg/storageos"
)

// Options are the controller-wide defaults of the plugins.
type Options struct {
	NamespaceGCInterval time.Duration
	NamespaceGCDelay    time.Duration
	// Metrics registers the plugins' metrics when the registry is built (never at
	// package init); nil means controller-runtime's registry, which the manager
	// serves on /metrics.
	Metrics prometheus.Registerer
}

// NewRegistry returns a registry of every compiled-in plugin, plus extra ones.
func NewRegistry(opts Options, extra ...plugin.Plugin) (*plugin.Registry, error) {
	if opts.Metrics == nil {
		opts.Metrics = ctrlmetrics.Registry
	}
	all := []plugin.Plugin{
		configmap.New(),
		deorbit.New(deorbit.Options{Metrics: deorbit.NewMetrics(opts.Metrics)}),
		namespacegc.New(namespacegc.Options{DefaultInterval: opts.NamespaceGCInterval, DefaultDelay: opts.NamespaceGCDelay,
			Metrics: storageos.NewMetrics(opts.Metrics)}),
		noderemoval.New(noderemoval.Options{Metrics: noderemoval.NewMetrics(opts.Metrics)}),
		routegc.New(routegc.Options{Metrics: routegc.NewMetrics(opts.Metrics)}),
	}
	return plugin.NewRegistry(append(all, extra...)...)
}
