package eventrecorder

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"
)

func event(object, reason, message string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", object, len(message)), Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Bundle", Namespace: "ns", Name: object, UID: types.UID("uid-" + object), APIVersion: "limbo.dev/v1alpha1"},
		Source:         corev1.EventSource{Component: "limbo"},
		Type:           corev1.EventTypeNormal, Reason: reason, Message: message, Count: 1,
	}
}

// sent feeds events to a correlator with opts and returns what it lets through
// (after merging), in order.
func sent(opts record.CorrelatorOptions, events []*corev1.Event) []string {
	opts.Clock = testclock.NewFakeClock(metav1.Now().Time) // all at once: no token comes back
	c := record.NewEventCorrelatorWithOptions(opts)
	var out []string
	for _, e := range events {
		r, err := c.EventCorrelate(e)
		if err != nil || r.Skip {
			continue
		}
		out = append(out, r.Event.Message)
	}
	return out
}

func TestCorrelation(t *testing.T) {
	var deletions, repeats, twoObjects []*corev1.Event
	for i := range 30 {
		deletions = append(deletions, event("b", "Deleted", fmt.Sprintf("ConfigMap ns/cm-%02d deleted", i)))
		repeats = append(repeats, event("b", "ApplyFailed", "the same failure"))
		twoObjects = append(twoObjects, event(fmt.Sprintf("b%d", i%2), "Deleted", fmt.Sprintf("ConfigMap ns/cm-%02d deleted", i)))
	}
	cases := []struct {
		name   string
		opts   record.CorrelatorOptions
		events []*corev1.Event
		// sent is how many events go out; merged whether one of them is a merge
		// of different messages.
		sent   int
		merged bool
	}{
		{"thirty deletions on one Bundle: each its own event", Correlation(), deletions, 30, false},
		{"the same event thirty times: held back after the burst", Correlation(), repeats, 25, false},
		{"deletions on two Bundles", Correlation(), twoObjects, 30, false},
		// What this package changes: client-go's defaults merge an object's
		// events of one reason after ten messages and drop them after 25.
		{"client-go's defaults, thirty deletions", record.CorrelatorOptions{}, deletions, 25, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := sent(tc.opts, tc.events)
			merged := false
			for _, m := range out {
				merged = merged || strings.Contains(m, "combined from similar events")
			}
			if len(out) != tc.sent || merged != tc.merged {
				t.Errorf("%d events sent (merged: %v), want %d (merged: %v): %q", len(out), merged, tc.sent, tc.merged, out)
			}
		})
	}
}
