package bundle

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// limbo_bundle_resources{state} sums the resources of every Bundle recorded and
// not forgotten, with every state exported (at zero when none is in it).
func TestMetricsRecordAndForget(t *testing.T) {
	status := func(states ...limbov1alpha1.ResourceState) limbov1alpha1.BundleStatus {
		var st limbov1alpha1.BundleStatus
		for _, s := range states {
			st.Resources = append(st.Resources, limbov1alpha1.ResourceStatus{State: s})
		}
		return st
	}
	type step struct {
		bundle string
		status *limbov1alpha1.BundleStatus // nil: forget the Bundle
	}
	ready, blocked := limbov1alpha1.ResourceReady, limbov1alpha1.ResourceBlocked
	for _, tc := range []struct {
		name  string
		steps []step
		want  map[limbov1alpha1.ResourceState]float64
	}{
		{name: "one Bundle", steps: []step{{"a/x", new(status(ready, ready, blocked))}},
			want: map[limbov1alpha1.ResourceState]float64{ready: 2, blocked: 1}},
		{name: "Bundles add up", steps: []step{{"a/x", new(status(ready))}, {"a/y", new(status(ready, blocked))}},
			want: map[limbov1alpha1.ResourceState]float64{ready: 2, blocked: 1}},
		{name: "a later pass replaces the Bundle's counts", steps: []step{{"a/x", new(status(blocked, blocked))}, {"a/x", new(status(ready))}},
			want: map[limbov1alpha1.ResourceState]float64{ready: 1}},
		{name: "a forgotten Bundle drops out", steps: []step{{"a/x", new(status(ready))}, {"a/y", new(status(blocked))}, {"a/x", nil}},
			want: map[limbov1alpha1.ResourceState]float64{blocked: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			for _, s := range tc.steps {
				if s.status == nil {
					m.forget(s.bundle)
				} else {
					m.record(s.bundle, *s.status)
				}
			}
			for _, s := range []limbov1alpha1.ResourceState{ready, limbov1alpha1.ResourceInProgress, blocked, limbov1alpha1.ResourceError, limbov1alpha1.ResourceDeleting} {
				if got := testutil.ToFloat64(m.resources.WithLabelValues(string(s))); got != tc.want[s] {
					t.Errorf("limbo_bundle_resources{state=%q} = %v, want %v", s, got, tc.want[s])
				}
			}
		})
	}
}

// Metrics built twice on one registry (a manager rebuilt in the same process)
// share the served gauge instead of panicking.
func TestNewMetricsTwiceOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	m := NewMetrics(reg)
	m.record("a/x", limbov1alpha1.BundleStatus{Resources: []limbov1alpha1.ResourceStatus{{State: limbov1alpha1.ResourceReady}}})
	if n, err := testutil.GatherAndCount(reg, "limbo_bundle_resources"); err != nil || n != 5 {
		t.Errorf("gathered %d series of limbo_bundle_resources (%v), want one per state", n, err)
	}
}
