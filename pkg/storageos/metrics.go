package storageos

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Metrics holds the Prometheus collectors the client records into. Pass one
// in Config.Metrics. A nil *Metrics records nothing.
type Metrics struct {
	// RequestDuration is limbo_storageos_request_duration_seconds{operation,code}.
	RequestDuration *prometheus.HistogramVec
	// RequestsTotal is limbo_storageos_requests_total{operation,code}.
	RequestsTotal *prometheus.CounterVec
}

// NewMetrics creates the client's collectors and registers them with reg,
// unless reg is nil. If reg already holds collectors with the same
// descriptors, for example because NewMetrics was called before with the
// same registry, it reuses those instead of panicking. Any other
// registration error panics, as with prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "limbo_storageos_request_duration_seconds",
			Help:    "Duration of StorageOS API requests by operation and HTTP status code (or timeout/canceled/error).",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation", "code"}),
		RequestsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "limbo_storageos_requests_total",
			Help: "StorageOS API requests by operation and HTTP status code (or timeout/canceled/error).",
		}, []string{"operation", "code"}),
	}
	if reg == nil {
		return m
	}
	m.RequestDuration = promreg.Register(reg, m.RequestDuration)
	m.RequestsTotal = promreg.Register(reg, m.RequestsTotal)
	return m
}

func (m *Metrics) observe(op, code string, d time.Duration) {
	if m == nil {
		return
	}
	if m.RequestDuration != nil {
		m.RequestDuration.WithLabelValues(op, code).Observe(d.Seconds())
	}
	if m.RequestsTotal != nil {
		m.RequestsTotal.WithLabelValues(op, code).Inc()
	}
}
