package it

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object a teardown released is deleted at its deadline even while that
// teardown waits for a later wave: here a dependency held in Terminating by a
// finalizer. The reaper used to leave released objects to a Bundle being torn
// down, which decides only what it still controls, so top waited as long as mid.
func TestReaperReleasedWhileTeardownBlocked(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	top := configMap("top", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"})
	b := createBundle(t, ns, "teardown",
		objectResource(t, "top", top, limbov1alpha1.Reference{Resource: "mid"}),
		objectResource(t, "mid", configMap("mid", map[string]any{"k": "v"}, nil)))
	waitReady(t, b)
	holdConfigMap(t, ns, "mid")

	gone := watchConfigMapDeletion(t, ns, "top")
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	// Timed by the watch, and judged by the state the deletion found (released
	// for a second or two only, a poll could miss it): a wait for top to be
	// gone would pass a teardown that deleted it at once, its delay ignored.
	at := gone.wait(t, testenv.DefaultTimeout)
	last, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gone.last)
	if err != nil {
		t.Fatal(err)
	}
	released := &unstructured.Unstructured{Object: last}
	if err := isReleased(released, b); err != nil {
		t.Fatalf("deleted, not released first: %v", err)
	}
	stamp, err := time.Parse(time.RFC3339, released.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	if deadline := stamp.Add(2 * time.Second); at.Before(deadline) {
		t.Errorf("top deleted at %s, before its deadline %s", at.Format(time.RFC3339Nano), deadline)
	}
	if mid := getObject(t, configMapGVK, ns, "mid"); mid == nil || mid.GetDeletionTimestamp() == nil {
		t.Fatal("ConfigMap mid is not held in Terminating: the teardown was not blocked")
	}
	if getBundle(t, b) == nil {
		t.Fatal("the Bundle is gone: its teardown was not blocked")
	}
}
