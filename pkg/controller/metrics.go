package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/limbo-dev/limbo/pkg/controller/bundle"
	"github.com/limbo-dev/limbo/pkg/eventrecorder"
	"github.com/limbo-dev/limbo/pkg/softdelete"
	"github.com/limbo-dev/limbo/pkg/statusmetrics"
)

// Metrics are the collectors of limbo's controllers beyond controller-runtime's
// own (the plugins register theirs through plugins.Options.Metrics). They are
// built and registered when the manager is built, never at package init, so
// that a program that imports limbo's packages without running the controller
// (kubectl-limbo) registers none.
type Metrics struct {
	Engine  *softdelete.Metrics
	Bundles *bundle.Metrics
	Status  *statusmetrics.Collector
	// EventsDropped counts events the recorder had no room to send.
	EventsDropped prometheus.Counter
}

// NewMetrics builds the controllers' metrics and registers them with reg,
// reusing those already there (a manager rebuilt in the same process).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		Engine:  softdelete.NewMetrics(reg),
		Bundles: bundle.NewMetrics(reg),
		Status:  statusmetrics.Register(reg),

		EventsDropped: eventrecorder.NewDroppedCounter(reg),
	}
}
