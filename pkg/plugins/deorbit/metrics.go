package deorbit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Phases of limbo_deorbit_phase_duration_seconds, measured from the teardown's
// start (the Bundle's deletion).
const (
	// PhaseDelete ends when every item is gone from the target.
	PhaseDelete = "delete"
	// PhaseWait runs from there until the PVs and load balancers are gone.
	PhaseWait = "wait"
	// PhaseTotal is the whole deorbit, however it ended.
	PhaseTotal = "total"
)

// Steps of limbo_deorbit_failures_total.
const (
	// StepKubeconfig: the kubeconfig Secret is missing or unusable.
	StepKubeconfig = "kubeconfig"
	// StepUnreachable: another cluster's API server answered nothing.
	StepUnreachable = "unreachable"
	// StepList: the target answered a listing with an error, or another
	// cluster answered other requests while a listing timed out (a slow
	// target), or a request to this cluster failed in any way (it is never
	// unreachable).
	StepList = "list"
	// StepTimeout and StepAPIUnavailable: deorbit gave up, leaving debris.
	StepTimeout        = "timeout"
	StepAPIUnavailable = "api_unavailable"
)

// Metrics are deorbit's.
type Metrics struct {
	// PhaseDuration observes each phase once, when it ends.
	PhaseDuration *prometheus.HistogramVec
	// Failures counts failed passes by step, and the give-ups.
	Failures *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (reusing those
// already there); a nil reg registers nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		PhaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "limbo_deorbit_phase_duration_seconds",
			Help:    "Duration of deorbit's phases from the Bundle's deletion: delete (until every item is gone from the target), wait (then until PVs and load balancers are gone), total (however it ended).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10), // 1s .. ~3 days
		}, []string{"phase"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "limbo_deorbit_failures_total",
			Help: "Failed deorbit passes by step (kubeconfig, unreachable, list), and deorbits that gave up leaving debris (timeout, api_unavailable).",
		}, []string{"step"}),
	}
	for _, step := range []string{StepKubeconfig, StepUnreachable, StepList, StepTimeout, StepAPIUnavailable} {
		m.Failures.WithLabelValues(step) // exported at zero
	}
	if reg != nil {
		m.PhaseDuration = promreg.Register(reg, m.PhaseDuration)
		m.Failures = promreg.Register(reg, m.Failures)
	}
	return m
}
