package bundle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// The cache and the start scan select the objects labelled with a Bundle's
// name, but not the Endpoints and EndpointSlices the endpoint controllers make
// for a Service of a Bundle, which copy its labels: watched after every start,
// each endpoint change ran a pass of the Service's Bundle.
func TestManagedSelectorLeavesOutEndpointCopies(t *testing.T) {
	for _, tc := range []struct {
		labels labels.Set
		want   bool
	}{
		{labels.Set{limbov1alpha1.LabelBundle: "web"}, true},
		{labels.Set{}, false},
		{labels.Set{limbov1alpha1.LabelBundle: "web", "endpoints.kubernetes.io/managed-by": "endpoint-controller"}, false},
		{labels.Set{limbov1alpha1.LabelBundle: "web", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}, false},
		{labels.Set{limbov1alpha1.LabelBundle: "web", "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}, false},
		{labels.Set{limbov1alpha1.LabelBundle: "web", "endpointslice.kubernetes.io/managed-by": "example.com/mine"}, true}, // declared in a Bundle
	} {
		if got := ManagedSelector().Matches(tc.labels); got != tc.want {
			t.Errorf("ManagedSelector().Matches(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
