package softdelete_test

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// limbo_pending_deletions is the sum over owners of their last reported count;
// an owner that reports zero drops out.
func TestSetPending(t *testing.T) {
	type report struct {
		owner string
		n     int
	}
	for _, tc := range []struct {
		name    string
		reports []report
		want    float64
	}{
		{name: "nothing reported", want: 0},
		{name: "one owner", reports: []report{{"bundle/a/x", 3}}, want: 3},
		{name: "owners add up", reports: []report{{"bundle/a/x", 3}, {"reaper", 2}}, want: 5},
		{name: "a later report replaces the owner's", reports: []report{{"bundle/a/x", 3}, {"bundle/a/x", 1}}, want: 1},
		{name: "zero drops the owner", reports: []report{{"bundle/a/x", 3}, {"reaper", 2}, {"bundle/a/x", 0}}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := softdelete.NewMetrics(reg)
			for _, r := range tc.reports {
				m.SetPending(r.owner, r.n)
			}
			if got := gauge(t, reg, "limbo_pending_deletions"); got != tc.want {
				t.Errorf("limbo_pending_deletions = %v, want %v", got, tc.want)
			}
		})
	}
}

// A manager rebuilt in the same process builds its metrics again on the same
// registry: that does not panic, and the new metrics are the ones served.
func TestNewMetricsTwiceOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	softdelete.NewMetrics(reg).SetPending("bundle/a/x", 4)
	softdelete.NewMetrics(reg).SetPending("bundle/a/x", 1)
	if got := gauge(t, reg, "limbo_pending_deletions"); got != 1 {
		t.Errorf("limbo_pending_deletions = %v after the rebuilt metrics reported 1", got)
	}
}

// Rebuilt metrics start from nothing reported: the old manager's total is not
// served until the new one's owners have all reported again.
func TestNewMetricsRebuiltStartsAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	softdelete.NewMetrics(reg).SetPending("bundle/a/x", 4)
	softdelete.NewMetrics(reg)
	if got := gauge(t, reg, "limbo_pending_deletions"); got != 0 {
		t.Errorf("limbo_pending_deletions = %v right after a rebuild, want 0", got)
	}
}

// A nil registry registers nothing and still records.
func TestNewMetricsUnregistered(t *testing.T) {
	softdelete.NewMetrics(nil).SetPending("reaper", 1)
}

// gauge returns the value of the unlabelled gauge name in reg; the test fails
// when reg has no such gauge.
func gauge(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not gathered", name)
	return 0
}

// Every result of limbo_deletions_total is served from the start, at zero: the
// first failure after a restart is an increase an alert sees, not a new series.
func TestDeletionsServedFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	softdelete.NewMetrics(reg)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "limbo_deletions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					got[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]float64{softdelete.ResultDeleted: 0, softdelete.ResultGone: 0, softdelete.ResultFailed: 0}
	if !maps.Equal(got, want) {
		t.Errorf("limbo_deletions_total series at start: %v, want %v", got, want)
	}
}
