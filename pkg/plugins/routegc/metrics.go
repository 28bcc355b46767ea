package routegc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Operations of limbo_routegc_failures_total.
const (
	OpAuthenticate = "authenticate"
	OpGetRouter    = "get_router"
	// OpListServers counts failed listings, empty ones and incomplete ones (a
	// down cell's servers in them): all leave the desired side unknown.
	OpListServers = "list_servers"
	OpRemoveRoute = "remove_route"
)

// Metrics are route-gc's counters.
type Metrics struct {
	// Orphaned counts routes found orphaned (each time a route becomes one).
	Orphaned prometheus.Counter
	// Removed counts routes this plugin removed from a router (a route already
	// gone is not counted).
	Removed prometheus.Counter
	// Failures counts failed OpenStack operations, by operation.
	Failures *prometheus.CounterVec
}

// NewMetrics creates the counters, at zero, and registers them with reg
// (reusing those already there); a nil reg registers nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Orphaned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "limbo_routegc_orphaned_routes_total",
			Help: "Routes inside a cluster CIDR found orphaned (their next hop is no Nova server), each time a route becomes one.",
		}),
		Removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "limbo_routegc_removed_routes_total",
			Help: "Orphaned routes removed from their router by route-gc.",
		}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "limbo_routegc_failures_total",
			Help: "Failed OpenStack operations of route-gc, by operation (an empty or incomplete server listing counts as a list_servers failure).",
		}, []string{"operation"}),
	}
	for _, op := range []string{OpAuthenticate, OpGetRouter, OpListServers, OpRemoveRoute} {
		m.Failures.WithLabelValues(op) // exported at zero, so that rate() and alerts work from the start
	}
	if reg != nil {
		m.Orphaned = promreg.Register(reg, m.Orphaned)
		m.Removed = promreg.Register(reg, m.Removed)
		m.Failures = promreg.Register(reg, m.Failures)
	}
	return m
}
