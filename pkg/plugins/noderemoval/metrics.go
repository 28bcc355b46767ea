package noderemoval

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Metrics are node-removal's metrics.
type Metrics struct {
	// UndrainedNodes is limbo_node_removal_undrained_nodes{namespace,bundle,resource}.
	UndrainedNodes *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (reusing those
// already there); a nil reg registers nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{UndrainedNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "limbo_node_removal_undrained_nodes",
		Help: "Nodes deleted without being drained (their Csibmnode has no drain label), whose csi-baremetal resources node-removal leaves alone.",
	}, []string{"namespace", "bundle", "resource"})}
	if reg != nil {
		m.UndrainedNodes = promreg.Register(reg, m.UndrainedNodes)
	}
	return m
}
