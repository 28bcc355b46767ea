package it

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Soft delete is turned off the way it was turned on: the delay taken out of a
// template that is still in the Bundle goes from the live object (limbo owns the
// annotation it applied), so the object is deleted at once when it later leaves
// the Bundle. Smith's worst soft-delete trap was a delay that outlived its
// template.
func TestSoftDeleteDelayRemovedFromTheTemplate(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "off", keep,
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h", "team": "a"})))
	waitReady(t, b)

	updateBundle(t, b, keep, objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{"team": "a"})))
	waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		if delay, ok := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; ok {
			return fmt.Errorf("db still has %s=%s", limbov1alpha1.AnnotationDeletionDelay, delay)
		}
		return nil
	})
	waitReady(t, b)

	updateBundle(t, b, keep)
	waitGone(t, configMapGVK, ns, "db")
	noPendingDeletions(t, b)
}
