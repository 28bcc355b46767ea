package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object moved from one Bundle to another: the new Bundle declares it to
// adopt it (limbo.dev/adopt) while the old one still controls it
// (ControlledByOther), then the old one drops it. At the end of its countdown
// the old Bundle hands it over instead of deleting it — released to the new
// Bundle, which adopts it: the same object, now the new Bundle's, out of limbo.
// It used to be deleted, and the new Bundle then created an empty one in its
// place (a PVC's data lost).
func TestAdoptionHandOverAtTheDeadline(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "10s"})
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
// released by from for b instead of deleted.
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
		case o.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] != "" || o.GetAnnotations()[limbov1alpha1.AnnotationReleased] != "" ||
			o.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "":
			return fmt.Errorf("%s is still in limbo: %v %v", name, o.GetAnnotations(), o.GetLabels())
		}
		return nil
	})
	waitEventContaining(t, from, "Normal", limbov1alpha1.EventDeletionScheduled, "ConfigMap "+b.Namespace+"/"+name,
		fmt.Sprintf("released to limbo for Bundle %q, which declares it to adopt it", b.Name))
	waitEventContaining(t, b, "Normal", limbov1alpha1.EventDeletionCancelled, "ConfigMap "+b.Namespace+"/"+name)
}

// An object handed over at the end of its countdown to a Bundle that declares it
// to adopt it, behind a dependency that is not Ready: the adopting Bundle cannot
// adopt it yet, and is deleted before it does. The object was due when it was
// handed over, so it goes then, as it would have without the hand-over. Before,
// the hand-over took it out of limbo and removed its owner reference: once the
// adopter went, nothing managed it any more and it stayed for good.
func TestAdoptionHandOverAdopterGoesFirst(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const delay = 5 * time.Second
	db := configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	old := waitReady(t, createBundle(t, ns, "old", keep, objectResource(t, "db", db)))
	uid := getObject(t, configMapGVK, ns, "db").GetUID()

	createWidget(t, ns, "gate", false)
	b := createBundle(t, ns, "new", objectResource(t, "gate", withAnnotations(widget("gate"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"})),
		objectResource(t, "db", withAnnotations(db, map[string]any{limbov1alpha1.AnnotationAdopt: "true"}), limbov1alpha1.Reference{Resource: "gate"}))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceError, "ControlledByOther")
	})
	updateBundle(t, old, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	// Past its deadline, the old Bundle no longer controls it: handed over.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		o := getObject(t, configMapGVK, ns, "db")
		switch {
		case o == nil:
			return fmt.Errorf("db was deleted while Bundle new declares it to adopt it")
		case time.Now().Before(stamp.Add(delay)) || metav1.GetControllerOf(o) != nil:
			return fmt.Errorf("db is still controlled: %v", o.GetOwnerReferences())
		}
		return nil
	})
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	// Due, released, and kept while Bundle new declares it to adopt it.
	testenv.Consistently(t, 3*time.Second, func() error {
		if o := getObject(t, configMapGVK, ns, "db"); o == nil || o.GetUID() != uid {
			return fmt.Errorf("db was deleted while Bundle new declares it to adopt it")
		}
		return nil
	})

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	waitGone(t, configMapGVK, ns, "db")
}
