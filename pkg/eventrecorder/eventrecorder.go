package eventrecorder

import (
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
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

// New starts a broadcaster that sends events to sink, through the correlator of
// Correlation, and logs each at log's V(1); it returns a recorder of events from
// component and the broadcaster's stop, which the caller calls once nothing
// records any more.
func New(sink typedcorev1.EventInterface, scheme *runtime.Scheme, component string, log logr.Logger) (record.EventRecorder, func()) {
	broadcaster := record.NewBroadcaster(record.WithCorrelatorOptions(Correlation()))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: sink})
	broadcaster.StartEventWatcher(func(e *corev1.Event) {
		log.V(1).Info(e.Message, "type", e.Type, "object", e.InvolvedObject, "reason", e.Reason)
	})
	return broadcaster.NewRecorder(scheme, corev1.EventSource{Component: component}), broadcaster.Shutdown
}
