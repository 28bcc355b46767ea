package it

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object moved from one Bundle to another: the new Bundle declares it to
// adopt it (limbo.dev/adopt) while the old one still controls it
// (ControlledByOther), then the old one drops it. At the end of its countdown
// the old Bundle hands it over instead of deleting it — the same object, now
// the new Bundle's, out of limbo. It used to be deleted, and the new Bundle then
// created an empty one in its place (a PVC's data lost).
func TestAdoptionHandOverAtTheDeadline(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"})
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	old := waitReady(t, createBundle(t, ns, "old", keep, objectResource(t, "db", db)))
	uid := getObject(t, configMapGVK, ns, "db").GetUID()

	b := createBundle(t, ns, "new", objectResource(t, "db", withAnnotations(db, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceError, "ControlledByOther")
	})
	updateBundle(t, old, keep)
	waitInLimbo(t, configMapGVK, ns, "db")

	waitHandedOver(t, old, b, "db", uid)
}

// waitHandedOver waits until ConfigMap name, of UID uid, is b's, out of limbo,
// handed over by from (event DeletionCancelled) instead of deleted.
func waitHandedOver(t testing.TB, from, b *limbov1alpha1.Bundle, name string, uid types.UID) {
	t.Helper()
	waitReady(t, b)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		o := getObject(t, configMapGVK, b.Namespace, name)
		switch {
		case o == nil || o.GetUID() != uid:
			return fmt.Errorf("%s was deleted", name)
		case metav1.GetControllerOf(o) == nil || metav1.GetControllerOf(o).UID != getBundle(t, b).UID:
			return fmt.Errorf("%s is not Bundle %s's: owners %v", name, b.Name, o.GetOwnerReferences())
		case o.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] != "" || o.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "":
			return fmt.Errorf("%s is still in limbo: %v %v", name, o.GetAnnotations(), o.GetLabels())
		}
		return nil
	})
	waitEventContaining(t, from, "Normal", limbov1alpha1.EventDeletionCancelled, "ConfigMap "+b.Namespace+"/"+name,
		fmt.Sprintf("Bundle %q declares it to adopt it", b.Name))
}
