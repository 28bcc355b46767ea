package controller_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/plugins"
)

// registerAll registers, with reg, every metric the manager registers with
// controller-runtime's registry: the controllers' and the plugins'.
func registerAll(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	controller.NewMetrics(reg)
	if _, err := plugins.NewRegistry(plugins.Options{Metrics: reg}); err != nil {
		t.Fatal(err)
	}
}

// collectorsOf records the collectors registered through it.
type collectorsOf struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (c *collectorsOf) Register(col prometheus.Collector) error {
	c.collectors = append(c.collectors, col)
	return c.Registerer.Register(col)
}

func (c *collectorsOf) MustRegister(cols ...prometheus.Collector) {
	for _, col := range cols {
		if err := c.Register(col); err != nil {
			panic(err)
		}
	}
}

// Importing the controller, and with it every package of limbo's (this test's
// binary links them all), registers no metric: not with controller-runtime's
// registry, not with Prometheus' default one. Metrics are registered when the
// manager is built, so kubectl-limbo, which imports some of these packages
// and builds no manager, serves and carries none.
func TestImportingRegistersNothing(t *testing.T) {
	rec := &collectorsOf{Registerer: prometheus.NewRegistry()}
	registerAll(t, rec)
	if len(rec.collectors) < 5 {
		t.Fatalf("the manager registers %d collectors; the probe needs them all", len(rec.collectors))
	}
	for name, reg := range map[string]prometheus.Registerer{"controller-runtime's": ctrlmetrics.Registry, "the default": prometheus.DefaultRegisterer} {
		for _, c := range rec.collectors {
			if err := reg.Register(c); err != nil {
				t.Errorf("%s registry already holds a metric of %T at import: %v", name, c, err)
				continue
			}
			reg.Unregister(c)
		}
	}
}

// The manager is rebuilt in one process (an in-process restart, `limbo dev`):
// registering its metrics again reuses those registered instead of panicking.
func TestMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	registerAll(t, reg)
	registerAll(t, reg)
}
