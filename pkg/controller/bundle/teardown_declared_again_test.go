package bundle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle deleted while its spec declares an object still counting down —
// the user put it back, and the Bundle was deleted before a pass took it back,
// or while a spec error kept every pass from acting — releases that object
// with a countdown of its own, from the deletion: it was the Bundle's when the
// Bundle went. Its old countdown, long due, had the reaper delete it at once.
// An orphan the spec does not declare keeps its countdown.
func TestTeardownOfAnObjectDeclaredAgain(t *testing.T) {
	old := "2020-01-01T00:00:00Z"
	inLimbo := func(name string) *corev1.ConfigMap {
		cm := bundleConfigMap(name, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: old})
		cm.Labels[limbov1alpha1.LabelPendingDeletion] = "true"
		return cm
	}
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "db")}, limbov1alpha1.BundleStatus{})
	f := newTeardownFixture(t, b, nil, inLimbo("db"), inLimbo("orphan"))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	released := func(name string) bool {
		cm := f.liveConfigMap(t, name)
		return cm != nil && metav1.GetControllerOf(cm) == nil
	}
	// One pass takes db out of limbo, a later one releases it.
	for range 5 {
		if released("db") {
			break
		}
		if _, err := f.r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	db, orphan := f.liveConfigMap(t, "db"), f.liveConfigMap(t, "orphan")
	if db == nil || metav1.GetControllerOf(db) != nil || db.Labels[limbov1alpha1.LabelPendingDeletion] != "true" {
		t.Fatalf("db not released: %+v", db)
	}
	if stamp := db.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; stamp == "" || stamp == old {
		t.Errorf("db released with the stamp %q, want one of its release", stamp)
	}
	if orphan == nil || metav1.GetControllerOf(orphan) != nil || orphan.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != old {
		t.Errorf("the orphan not released with its own countdown: %+v", orphan)
	}
}
