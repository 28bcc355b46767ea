package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// PodTemplates are this file's kind because no other test's Bundle uses them:
// a kind some Bundle's spec or status names is watched again after a restart
// anyway, and the restart would then not show what these tests are about.
var podTemplateGVK = schema.GroupVersionKind{Version: "v1", Kind: "PodTemplate"}

// As TestOrphanOfAKindOnlyAFailedStatusWriteNamed, but the controller restarts
// between creating the object and any status write that names its kind, and
// the spec drops the object while the controller is down: the restarted
// controller learns the kind from no spec, no status and no watch. It must
// still find the object it created and controls, and put it in limbo with its
// deletionDelay. Not parallel: it restarts the shared controller.
func TestOrphanOfAKindOnlyAFailedStatusWriteNamedAfterRestart(t *testing.T) {
	b, config, refusal := podTemplateBehindFailedStatusWrites(t)
	if err := env.RestartController(func() { updateBundle(t, b, config) }); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	refusal.lift()

	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, pd := range cur.Status.PendingDeletions {
			if pd.Kind == podTemplateGVK.Kind && pd.Name == "template" {
				return nil
			}
		}
		return fmt.Errorf("pendingDeletions %+v does not list PodTemplate template", cur.Status.PendingDeletions)
	})
	waitInLimbo(t, podTemplateGVK, b.Namespace, "template")
}

// The same object, and the Bundle deleted while the controller is down: the
// restarted controller's teardown must find the object and release it to limbo
// with its deletionDelay. One it missed would stay controlled by the gone
// Bundle, and the garbage collector would delete it at once. Not parallel: it
// restarts the shared controller.
func TestTeardownAfterRestartFindsAKindOnlyAFailedStatusWriteNamed(t *testing.T) {
	b, config, refusal := podTemplateBehindFailedStatusWrites(t)
	if err := env.RestartController(func() {
		updateBundle(t, b, config)
		deleteBundle(t, b, metav1.DeletePropagationBackground)
	}); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	refusal.lift()

	waitBundleGone(t, b)
	waitInLimbo(t, podTemplateGVK, b.Namespace, "template")
	testenv.Consistently(t, 3*time.Second, func() error {
		o := getObject(t, podTemplateGVK, b.Namespace, "template")
		switch {
		case o == nil || o.GetDeletionTimestamp() != nil:
			return fmt.Errorf("PodTemplate template was deleted; its deletionDelay is 1h")
		case metav1.GetControllerOf(o) != nil:
			return fmt.Errorf("PodTemplate template is still controlled by the deleted Bundle")
		}
		return nil
	})
}

// podTemplateBehindFailedStatusWrites is objectBehindFailedStatusWrites of
// PodTemplate template, with a deletionDelay of 1h.
func podTemplateBehindFailedStatusWrites(t *testing.T) (*limbov1alpha1.Bundle, limbov1alpha1.Resource, *requestRefusal) {
	t.Helper()
	return objectBehindFailedStatusWrites(t, podTemplateGVK, map[string]any{
		"apiVersion": "v1", "kind": "PodTemplate",
		"metadata": map[string]any{"name": "template", "annotations": map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}},
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.invalid/c"}}}},
	})
}
