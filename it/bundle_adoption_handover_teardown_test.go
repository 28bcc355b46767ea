package it

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
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

	waitReady(t, b)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		o := getObject(t, configMapGVK, ns, "db")
		switch {
		case o == nil || o.GetUID() != uid:
			return fmt.Errorf("db was deleted")
		case metav1.GetControllerOf(o) == nil || metav1.GetControllerOf(o).UID != getBundle(t, b).UID:
			return fmt.Errorf("db is not the new Bundle's: owners %v", o.GetOwnerReferences())
		}
		return nil
	})
	waitEventContaining(t, old, "Normal", limbov1alpha1.EventDeletionCancelled, "ConfigMap "+ns+"/db", `Bundle "new" declares it to adopt it`)
}
