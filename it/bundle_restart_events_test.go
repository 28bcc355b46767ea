package it

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A restarted controller has no memory of what it applied (applied.go): its
// first pass of each Bundle applies every object again, which the API server
// turns into a no-op. Those applies change nothing and are no change to
// announce: before, every Bundle got an event naming each of its objects
// "updated" after every restart — 1,000 of them after a rollout of a
// controller of 1,000 Bundles (make bench -shards 2, session 36). The object
// the restarted controller did make is announced alone. Not parallel: it
// restarts the shared controller.
func TestRestartAnnouncesOnlyWhatItChanged(t *testing.T) {
	ns := env.Namespace(t)
	kept := configMapResources(t, "kept", 2, nil)
	b := createBundle(t, ns, "restart-events", kept...)
	waitReady(t, b)

	added := objectResource(t, "added", configMap("added", map[string]any{"k": "v"}, nil))
	if err := env.RestartController(func() { updateBundle(t, b, append(kept, added)...) }); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	waitReady(t, b)
	var announced corev1.Event
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		for _, e := range events(t, b) {
			if strings.Contains(e.Message, `resource "added"`) {
				announced = e
				return nil
			}
		}
		return fmt.Errorf("no event announces the object added while the controller was down")
	})
	if announced.Reason != limbov1alpha1.EventCreated || strings.Contains(announced.Message, "kept") {
		t.Errorf("the restarted controller's pass announced %s %q: want %s of the added object alone", announced.Reason, announced.Message, limbov1alpha1.EventCreated)
	}
	for _, e := range events(t, b) {
		if e.Reason == limbov1alpha1.EventUpdated || e.Reason == limbov1alpha1.EventApplied {
			t.Errorf("an event announces a change of objects the restart left as they were: %s %q", e.Reason, e.Message)
		}
	}
}
