package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// isReleased checks that u was released to limbo by Bundle b's teardown: no owner
// reference to b, the bundle label kept, stamped, labelled pending-deletion.
func isReleased(u *unstructured.Unstructured, b *limbov1alpha1.Bundle) error {
	for _, ref := range u.GetOwnerReferences() {
		if ref.UID == b.UID || ref.Kind == "Bundle" {
			return fmt.Errorf("%s %s still has owner reference %+v", u.GetKind(), u.GetName(), ref)
		}
	}
	if got := u.GetLabels()[limbov1alpha1.LabelBundle]; got != b.Name {
		return fmt.Errorf("%s %s: label %s=%q, want %q", u.GetKind(), u.GetName(), limbov1alpha1.LabelBundle, got, b.Name)
	}
	if u.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "true" || u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
		return fmt.Errorf("%s %s is not stamped: labels %v, annotations %v", u.GetKind(), u.GetName(), u.GetLabels(), u.GetAnnotations())
	}
	return nil
}

// A delay outlives its Bundle: deleting the Bundle (background) releases an object
// with a deletionDelay to limbo instead of deleting it, the Bundle goes, and the
// reaper deletes the object at its deadline, not before.
func TestSoftDeleteReaperAfterBundleDeletion(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const delay = 4 * time.Second
	b := createBundle(t, ns, "reaped",
		objectResource(t, "app", configMap("app", map[string]any{"a": "b"}, nil)),
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	b = waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())
	gone := watchConfigMapDeletion(t, ns, "db")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	released := waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error { return isReleased(u, b) })
	stamp, err := time.Parse(time.RFC3339, released.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	deadline := stamp.Add(delay)
	if got := released.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != delay.String() {
		t.Errorf("released db has delay %q, want %q", got, delay)
	}
	waitGone(t, configMapGVK, ns, "app") // no delay: deleted by the teardown
	waitBundleGone(t, b)
	waitEventContaining(t, b, corev1.EventTypeNormal, "DeletionScheduled", fmt.Sprintf("ConfigMap %s/db released to limbo for %v: deleted at %s", ns, delay, deadline.UTC().Format(time.RFC3339)))

	testenv.Consistently(t, time.Until(deadline)-300*time.Millisecond, existsWithUID(t, configMapGVK, ns, "db", uid))
	at := gone.wait(t, testenv.DefaultTimeout)
	if at.Before(deadline) {
		t.Errorf("the reaper deleted db at %s, before its deadline %s", at, deadline)
	}
	// A bound of the bugs this guards against (a deadline left to the next
	// full scan, or to a backoff), not of the machine: a parallel race test
	// may hold the reaper's one loop for a few seconds.
	if late := at.Sub(deadline); late > 10*time.Second {
		t.Errorf("the reaper deleted db %v after its deadline", late)
	}
}

// A new Bundle of the same name that declares an object released by its
// predecessor adopts it before its deadline: owner reference back, countdown
// cancelled, and the object is kept past the deadline.
func TestSoftDeleteReaperNewBundleAdopts(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const delay = 15 * time.Second
	db := func() limbov1alpha1.Resource {
		return objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()}))
	}
	old := createBundle(t, ns, "reborn", db())
	old = waitReady(t, old)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())

	deleteBundle(t, old, metav1.DeletePropagationBackground)
	released := waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error { return isReleased(u, old) })
	stamp, err := time.Parse(time.RFC3339, released.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	deadline := stamp.Add(delay)
	waitBundleGone(t, old)

	// Timed at the new Bundle's creation, with a margin for a delete the
	// reaper decided a moment before it: what comes after may be slow.
	if time.Now().After(deadline.Add(-1500 * time.Millisecond)) {
		t.Fatalf("the test was too slow: the new Bundle is created within 1.5 s of db's deadline %s", deadline)
	}
	b := createBundle(t, ns, "reborn", db())
	adopted := waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		if err := notInLimbo(u); err != nil {
			return err
		}
		return isControlledBy(u, getBundle(t, b))
	})
	if string(adopted.GetUID()) != uid {
		t.Fatalf("db was re-created (uid %s, was %s), not adopted", adopted.GetUID(), uid)
	}
	b = waitReady(t, b)
	waitEvent(t, b, corev1.EventTypeNormal, "Adopted", `resource "db": ConfigMap db adopted`)
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", fmt.Sprintf("ConfigMap %s/db is desired again: deletion cancelled", ns))
	noPendingDeletions(t, b)

	testenv.Consistently(t, time.Until(deadline)+2*time.Second, func() error {
		if err := existsWithUID(t, configMapGVK, ns, "db", uid)(); err != nil {
			return err
		}
		return notInLimbo(getObjectOrEmpty(t, ns, "db"))
	})
}
