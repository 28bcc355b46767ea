package eventrecorder

import (
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/limbo-dev/limbo/pkg/promreg"
)

// Correlation is the event correlator's options: events are merged and
// rate-limited only when they are the same event. Everything else is
// client-go's default.
func Correlation() record.CorrelatorOptions {
	return record.CorrelatorOptions{
		// The aggregation key of client-go's default with the message added:
		// events merge only with events of the same message, which the
		// correlator's event log already counts as one.
		KeyFunc: func(e *corev1.Event) (aggregateKey, localKey string) {
			key, message := record.EventAggregatorByReasonFunc(e)
			return key + "\x00" + message, message
		},
		// client-go's spam key (the object and the event's type) with the
		// reason and message added: the token bucket holds back a repeated
		// event, not an object's other events.
		SpamKeyFunc: func(e *corev1.Event) string {
			return strings.Join([]string{e.Source.Component, e.Source.Host,
				e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name,
				string(e.InvolvedObject.UID), e.InvolvedObject.APIVersion,
				e.Type, e.Reason, e.Message}, "\x00")
		},
	}
}

// stopGrace is how long a stop waits for the events still queued to be sent.
const stopGrace = 5 * time.Second

// New starts a broadcaster that sends events to sink, through the correlator of
// Correlation and a send queue that keeps every event of a burst (up to
// maxQueuedEvents waiting; dropped counts one beyond), and logs each at log's
// V(1); it returns a recorder of events from component and the broadcaster's
// stop, which the caller calls once nothing records any more: it sends what is
// queued, for at most stopGrace.
func New(sink typedcorev1.EventInterface, scheme *runtime.Scheme, component string, log logr.Logger, dropped prometheus.Counter) (record.EventRecorder, func()) {
	recorder, _, stop := start(&typedcorev1.EventSinkImpl{Interface: sink}, scheme, component, log, dropped.Inc)
	return recorder, stop
}

// NewDroppedCounter is the counter of events dropped for want of room in the
// send queue, registered with reg (reusing one already there).
func NewDroppedCounter(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "limbo_events_dropped_total",
		Help: "Events dropped because too many were waiting to be sent to the API server.",
	})
	if reg == nil {
		return c
	}
	return promreg.Register(reg, c)
}

func start(sink record.EventSink, scheme *runtime.Scheme, component string, log logr.Logger, dropped func()) (record.EventRecorder, *sendQueue, func()) {
	queue := newSendQueue(sink, log, dropped, maxQueuedEvents, retryPause)
	broadcaster := record.NewBroadcaster(record.WithCorrelatorOptions(Correlation()))
	broadcaster.StartRecordingToSink(queue)
	broadcaster.StartEventWatcher(func(e *corev1.Event) {
		log.V(1).Info(e.Message, "type", e.Type, "object", e.InvolvedObject, "reason", e.Reason)
	})
	return broadcaster.NewRecorder(scheme, corev1.EventSource{Component: component}), queue, func() {
		broadcaster.Shutdown()
		queue.close(stopGrace)
	}
}
