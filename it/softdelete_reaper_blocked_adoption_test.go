package it

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object released by a Bundle's teardown that a new Bundle of the same name
// declares behind a dependency that is not Ready is not adopted yet, so it stays
// released, its countdown running (the reaper leaves it to the Bundle that
// declares it). Cancelled without an owner, it looked like an object the garbage
// collector had orphaned: a background delete of the new Bundle was then taken
// for --cascade=orphan, and what the Bundle had created was left behind.
func TestSoftDeleteReaperBlockedAdoption(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := func(refs ...limbov1alpha1.Reference) limbov1alpha1.Resource {
		return objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: time.Hour.String()}), refs...)
	}
	old := createBundle(t, ns, "again", db())
	old = waitReady(t, old)
	deleteBundle(t, old, metav1.DeletePropagationBackground)
	waitBundleGone(t, old)
	if err := isReleased(getObject(t, configMapGVK, ns, "db"), old); err != nil {
		t.Fatal(err)
	}

	// A Widget without status is Ready (kstatus: Current): the Bundle adopts one
	// whose operator reported Ready=False.
	createWidget(t, ns, "gate", false)
	b := createBundle(t, ns, "again", objectResource(t, "gate", withAnnotations(widget("gate"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"})),
		db(limbov1alpha1.Reference{Resource: "gate"}))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	if err := isReleased(getObject(t, configMapGVK, ns, "db"), old); err != nil {
		t.Errorf("db while the new Bundle waits for gate: %v", err)
	}

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	waitGone(t, widgetGVK, ns, "gate") // controlled by the Bundle: deleted, not orphaned
	if err := isReleased(getObject(t, configMapGVK, ns, "db"), old); err != nil {
		t.Errorf("db after the new Bundle's background delete: %v", err)
	}
}
