package softdelete

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a deletion, the `result` label of limbo_deletions_total.
const (
	ResultDeleted = "deleted" // deleted by the engine at its deadline
	ResultGone    = "gone"    // already gone (NotFound, or re-created under another UID)
	ResultFailed  = "failed"  // the delete failed; it is retried
)

// Metrics are the engine's Prometheus metrics.
type Metrics struct {
	deletions *prometheus.CounterVec
	lateness  prometheus.Histogram

	mu      sync.Mutex
	pending map[string]int // by owner (a Bundle, the reaper)
}

// DefaultMetrics are registered with controller-runtime's registry, served on
// the manager's /metrics.
var DefaultMetrics = NewMetrics(ctrlmetrics.Registry)

// NewMetrics creates the metrics and registers them with reg.
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
		pending: map[string]int{},
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "limbo_pending_deletions",
		Help: "Objects and external items waiting in limbo.",
	}, m.pendingTotal)
	reg.MustRegister(m.deletions, m.lateness, gauge)
	return m
}

// SetPending records how many items owner has in limbo.
func (m *Metrics) SetPending(owner string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n == 0 {
		delete(m.pending, owner)
		return
	}
	m.pending[owner] = n
}

func (m *Metrics) pendingTotal() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := 0
	for _, n := range m.pending {
		total += n
	}
	return float64(total)
}
