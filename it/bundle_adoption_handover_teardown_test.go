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
// (ControlledByOther), then the old Bundle is deleted. Its teardown releases the
// object, even without a delay, instead of deleting it: the reaper holds it for
// the adopter, which adopts the same object. The old Bundle's other objects go
// as before, those of the next wave too — a released object is no evidence of
// --cascade=orphan (an object merely disowned was: the rest was never deleted).
// Before, an object without a delay was deleted with the old Bundle, and the new
// one created an empty one in its place (a PVC's data lost).
func TestAdoptionHandOverAtTeardown(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, nil))
	app := configMap("app", map[string]any{"a": "b"}, nil)
	// app depends on db: the teardown takes app (the first wave) before db.
	old := waitReady(t, createBundle(t, ns, "old", db, objectResource(t, "app", app, limbov1alpha1.Reference{Resource: "db"})))
	uid := getObject(t, configMapGVK, ns, "app").GetUID()

	b := createBundle(t, ns, "new", objectResource(t, "app", withAnnotations(app, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "app", limbov1alpha1.ResourceError, "ControlledByOther")
	})
	if err := env.Client.Delete(context.Background(), old); err != nil {
		t.Fatalf("delete Bundle old: %v", err)
	}
	waitGone(t, configMapGVK, ns, "db") // the next wave goes on as before
	waitBundleGone(t, old)

	waitReady(t, b)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		o := getObject(t, configMapGVK, ns, "app")
		switch {
		case o == nil || o.GetUID() != uid:
			return fmt.Errorf("app was deleted")
		case metav1.GetControllerOf(o) == nil || metav1.GetControllerOf(o).UID != getBundle(t, b).UID:
			return fmt.Errorf("app is not the new Bundle's: owners %v", o.GetOwnerReferences())
		case o.GetAnnotations()[limbov1alpha1.AnnotationReleased] != "" || o.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "":
			return fmt.Errorf("app is still in limbo: %v %v", o.GetAnnotations(), o.GetLabels())
		}
		return nil
	})
}
