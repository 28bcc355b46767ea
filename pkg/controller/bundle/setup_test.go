package bundle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle is passed again for a new spec, a deletion, changed finalizers and
// the informer's periodic resync (--resync-period), not for limbo's own status
// writes.
func TestBundleChanged(t *testing.T) {
	bundle := func(rv string, generation int64, finalizers ...string) *limbov1alpha1.Bundle {
		return &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", ResourceVersion: rv, Generation: generation, Finalizers: finalizers}}
	}
	deleting := bundle("3", 1, limbov1alpha1.FinalizerTeardown)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name     string
		old, new *limbov1alpha1.Bundle
		want     bool
	}{
		{"a status write", bundle("1", 1, limbov1alpha1.FinalizerTeardown), bundle("2", 1, limbov1alpha1.FinalizerTeardown), false},
		{"a new spec", bundle("1", 1), bundle("2", 2), true},
		{"finalizers changed", bundle("1", 1), bundle("2", 1, limbov1alpha1.FinalizerTeardown), true},
		{"deleted", bundle("2", 1, limbov1alpha1.FinalizerTeardown), deleting, true},
		{"the periodic resync", bundle("2", 1, limbov1alpha1.FinalizerTeardown), bundle("2", 1, limbov1alpha1.FinalizerTeardown), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bundleChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("passed: %v, want %v", got, tc.want)
			}
		})
	}
}
