package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

func newCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "limbo_test_total", Help: "test"})
}

// A second registration of the same metric returns the first collector, so
// that both users count into the series that is served.
func TestRegisterReusesExisting(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := promreg.Register(reg, newCounter())
	second := promreg.Register(reg, newCounter())
	if first != second {
		t.Fatal("the second registration did not return the registered collector")
	}
	second.Inc()
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Fatalf("gathered %v, %v; want one counter at 1", families, err)
	}
}

// A clash that is not the same metric (same name, other type) is a programming
// error and panics.
func TestRegisterPanicsOnClash(t *testing.T) {
	reg := prometheus.NewRegistry()
	promreg.Register(reg, newCounter())
	defer func() {
		if recover() == nil {
			t.Error("no panic on a clashing registration")
		}
	}()
	promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "limbo_test_total", Help: "other"}))
}
