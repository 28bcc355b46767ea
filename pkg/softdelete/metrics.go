package softdelete

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Results of a deletion, the `result` label of limbo_deletions_total.
const (
	ResultDeleted = "deleted" // deleted by the engine at its deadline
	ResultGone    = "gone"    // already gone (NotFound, or re-created under another UID)
	ResultFailed  = "failed"  // the delete failed; it is retried
)

// Metrics are the engine's Prometheus metrics. The manager builds them when it
// is built (NewMetrics), never at package init, so that a program that only
// reads limbo's state (kubectl-limbo) registers no metric.
type Metrics struct {
	deletions *prometheus.CounterVec
	lateness  prometheus.Histogram
	pending   prometheus.Gauge

	mu      sync.Mutex
	byOwner map[string]int // items in limbo by owner (a Bundle, the reaper)
}

// NewMetrics creates the metrics and registers them with reg, reusing those
// already there (a manager rebuilt in the same process); a nil reg registers
// nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "limbo_deletions_total",
			Help: "Deletions of orphans by the soft-delete engine, by result.",
		}, []string{"result"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "limbo_deletion_lateness_seconds",
			Help:    "Actual delete time minus deadline, for orphans deleted at the end of a countdown.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "limbo_pending_deletions",
			Help: "Objects and external items waiting in limbo.",
		}),
		byOwner: map[string]int{},
	}
	if reg != nil {
		m.deletions = promreg.Register(reg, m.deletions)
		m.lateness = promreg.Register(reg, m.lateness)
		m.pending = promreg.Register(reg, m.pending)
	}
	// Every result has its series from the start, so that rate() and increase()
	// see the first failure after a restart (a series born at 1 has no increase).
	for _, result := range []string{ResultDeleted, ResultGone, ResultFailed} {
		m.deletions.WithLabelValues(result)
	}
	// The gauge is the sum of byOwner, which starts empty: a reused gauge still
	// holds the total of the metrics it was registered with.
	m.pending.Set(0)
	return m
}

// SetPending records how many items owner has in limbo.
func (m *Metrics) SetPending(owner string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n == 0 {
		delete(m.byOwner, owner)
	} else {
		m.byOwner[owner] = n
	}
	total := 0
	for _, n := range m.byOwner {
		total += n
	}
	m.pending.Set(float64(total))
}
