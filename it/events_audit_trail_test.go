package it

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Every stamp and every deletion is an event of its own on the Bundle, however
// many objects leave it at once: the events are the audit trail. client-go's
// defaults merged an object's events of one reason once ten differed in message
// ("combined from similar events") and dropped its events beyond a burst of 25.
func TestEventsKeepEveryDeletion(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const leaving = 30
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "audit", append([]limbov1alpha1.Resource{keep},
		configMapResources(t, "cm", leaving, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"})...)...)
	waitReady(t, b)

	updateBundle(t, b, keep)
	for i := range leaving {
		waitGone(t, configMapGVK, ns, fmt.Sprintf("cm-%02d", i))
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		return everyObjectHasItsEvents(events(t, b), leaving)
	})
}

// everyObjectHasItsEvents checks that each of the objects cm-00… has a
// DeletionScheduled and a Deleted event naming it, and that no event was merged
// with others.
func everyObjectHasItsEvents(evs []corev1.Event, objects int) error {
	for _, e := range evs {
		if strings.Contains(e.Message, "combined from similar events") {
			return fmt.Errorf("events were merged: %s %s: %q", e.Type, e.Reason, e.Message)
		}
	}
	for i := range objects {
		name := fmt.Sprintf("/cm-%02d ", i) // "ConfigMap <namespace>/cm-07 is in limbo…", "… deleted"
		for _, reason := range []string{limbov1alpha1.EventDeletionScheduled, limbov1alpha1.EventDeleted} {
			found := false
			for _, e := range evs {
				found = found || (e.Reason == reason && strings.Contains(e.Message, name))
			}
			if !found {
				return fmt.Errorf("no %s event names ConfigMap %s (%d events on the Bundle)", reason, name, len(evs))
			}
		}
	}
	return nil
}
