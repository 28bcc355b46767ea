// Package plugins registers limbo's compiled-in plugins, one package each:
// configmap (the generator example), namespace-gc, node-removal.
package plugins

import (
	"time"

	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// Options are the controller-wide defaults of the plugins.
type Options struct {
	NamespaceGCInterval time.Duration
	NamespaceGCDelay    time.Duration
}

// NewRegistry returns a registry of every compiled-in plugin, plus extra ones.
func NewRegistry(opts Options, extra ...plugin.Plugin) (*plugin.Registry, error) {
	all := []plugin.Plugin{
		configmap.New(),
		namespacegc.New(namespacegc.Options{DefaultInterval: opts.NamespaceGCInterval, DefaultDelay: opts.NamespaceGCDelay}),
		noderemoval.New(),
	}
	return plugin.NewRegistry(append(all, extra...)...)
}
