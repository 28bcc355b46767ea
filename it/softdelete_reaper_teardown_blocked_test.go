package it

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if err := noObject(configMapGVK, ns, "top")(); err != nil {
			return fmt.Errorf("released with a 2s delay: %w", err)
		}
		return nil
	})
	if mid := getObject(t, configMapGVK, ns, "mid"); mid == nil || mid.GetDeletionTimestamp() == nil {
		t.Fatal("ConfigMap mid is not held in Terminating: the teardown was not blocked")
	}
	if getBundle(t, b) == nil {
		t.Fatal("the Bundle is gone: its teardown was not blocked")
	}
}
