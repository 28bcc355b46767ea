package bundle

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Metrics are the Bundle reconciler's metrics, beyond controller-runtime's own.
// The manager builds them when it is built (NewMetrics), never at package init.
type Metrics struct {
	resources *prometheus.GaugeVec

	mu       sync.Mutex
	byBundle map[string]map[limbov1alpha1.ResourceState]int
}

// NewMetrics creates the metrics and registers them with reg, reusing those
// already there (a manager rebuilt in the same process); a nil reg registers
// nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		resources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "limbo_bundle_resources",
			Help: "Resources of all Bundles, by state.",
		}, []string{"state"}),
		byBundle: map[string]map[limbov1alpha1.ResourceState]int{},
	}
	if reg != nil {
		m.resources = promreg.Register(reg, m.resources)
	}
	return m
}

// recordStatus keeps the series of the Bundle key (namespace/name) true to st, the
// status a pass or a teardown step of it decided, whether or not it is written
// (it is not when unchanged): limbo_bundle_resources counts st's resources by
// state, and the Bundle's share of the engine's limbo_pending_deletions is
// inLimbo — a pass's st.PendingDeletionCount (listed or not: the list holds at
// most MaxPendingDeletionsListed), a teardown's count of the entries still the
// Bundle's (see heldObjects).
func (r *Reconciler) recordStatus(key string, st limbov1alpha1.BundleStatus, inLimbo int) {
	r.Metrics.record(key, st)
	r.Engine.Metrics.SetPending(pendingOwner(key), inLimbo)
}

// forgetStatus drops the series of the Bundle key: it is gone, or its teardown
// let it go. (A Reconciler built without metrics, in a test, has none to drop.)
func (r *Reconciler) forgetStatus(key string) {
	if r.Metrics != nil {
		r.Metrics.forget(key)
	}
	if r.Engine != nil && r.Engine.Metrics != nil {
		r.Engine.Metrics.SetPending(pendingOwner(key), 0)
	}
}

// pendingOwner is the Bundle key's owner in the engine's pending gauge (the
// reaper's are "reaper/<kind>").
func pendingOwner(key string) string { return "bundle/" + key }

func (m *Metrics) record(bundle string, st limbov1alpha1.BundleStatus) {
	counts := map[limbov1alpha1.ResourceState]int{}
	for _, r := range st.Resources {
		counts[r.State]++
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byBundle[bundle] = counts
	m.publish()
}

func (m *Metrics) forget(bundle string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byBundle, bundle)
	m.publish()
}

func (m *Metrics) publish() {
	totals := map[limbov1alpha1.ResourceState]int{}
	for _, counts := range m.byBundle {
		for s, n := range counts {
			totals[s] += n
		}
	}
	for _, s := range []limbov1alpha1.ResourceState{limbov1alpha1.ResourceReady, limbov1alpha1.ResourceInProgress, limbov1alpha1.ResourceBlocked, limbov1alpha1.ResourceError, limbov1alpha1.ResourceDeleting} {
		m.resources.WithLabelValues(string(s)).Set(float64(totals[s]))
	}
}
