package tombstone

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The controller's own status writes (attempts, lastError) do not trigger the
// Tombstone: reacting to them would retry a failed delete at once, past its
// backoff. Every other change does: an expedite or a delay changed
// (annotations), a cancel (finalizers), a forced delete (deletion), a spec
// change (generation).
func TestNotStatusOnly(t *testing.T) {
	old := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ts", Generation: 1, ResourceVersion: "1",
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1m"},
		Finalizers:  []string{limbov1alpha1.FinalizerHardDelete}}}
	for _, tc := range []struct {
		name   string
		change func(*limbov1alpha1.Tombstone)
		want   bool
	}{
		{"status only", func(ts *limbov1alpha1.Tombstone) { ts.Status.Attempts, ts.Status.LastError = 1, "503" }, false},
		{"annotations", func(ts *limbov1alpha1.Tombstone) { ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "0s" }, true},
		{"finalizers", func(ts *limbov1alpha1.Tombstone) { ts.Finalizers = nil }, true},
		{"deletion", func(ts *limbov1alpha1.Tombstone) {
			ts.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}
		}, true},
		{"generation", func(ts *limbov1alpha1.Tombstone) { ts.Generation = 2 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := old.DeepCopy()
			changed.ResourceVersion = "2"
			tc.change(changed)
			if got := notStatusOnly.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: changed}); got != tc.want {
				t.Errorf("triggers = %v, want %v", got, tc.want)
			}
		})
	}
}
