package it

import (
	"context"
	"testing"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object moved from one Bundle to another by deleting the first: the new
// Bundle declares it to adopt it (limbo.dev/adopt) while the old one controls it
// (ControlledByOther), then the old Bundle is deleted. Its teardown hands the
// object over, as its pass does when the object leaves its spec, instead of
// deleting it with the old Bundle's other objects: the same object, now the new
// Bundle's. An object without a delay used to be deleted, and the new Bundle
// then created an empty one in its place (a PVC's data lost); one with a delay
// was released and already kept for the adopter.
func TestAdoptionHandOverAtTeardown(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := configMap("db", map[string]any{"a": "b"}, nil)
	gone := objectResource(t, "gone", configMap("gone", map[string]any{"a": "b"}, nil))
	old := waitReady(t, createBundle(t, ns, "old", gone, objectResource(t, "db", db)))
	uid := getObject(t, configMapGVK, ns, "db").GetUID()

	b := createBundle(t, ns, "new", objectResource(t, "db", withAnnotations(db, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceError, "ControlledByOther")
	})
	if err := env.Client.Delete(context.Background(), old); err != nil {
		t.Fatalf("delete Bundle old: %v", err)
	}
	waitGone(t, configMapGVK, ns, "gone") // the rest of the teardown goes on as before

	waitHandedOver(t, old, b, "db", uid)
}
