package it

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A countdown belongs to one object, not to a name: an object deleted during its
// countdown and re-created under the same name is not hit by the old deadline.
func TestSoftDeleteRecreatedObjectNotHitByOldCountdown(t *testing.T) {
	t.Parallel()
	const delay = 4 * time.Second
	// inLimbo puts ConfigMap db of a new Bundle in limbo and returns the Bundle
	// and the deadline of db's countdown.
	inLimbo := func(t *testing.T, ns string) (*limbov1alpha1.Bundle, time.Time) {
		t.Helper()
		keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
		b := createBundle(t, ns, "uid", keep,
			objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
		b = waitReady(t, b)
		updateBundle(t, b, keep)
		old, stamp := waitInLimbo(t, configMapGVK, ns, "db")
		deleteObject(t, old)
		waitGone(t, configMapGVK, ns, "db")
		return b, stamp.Add(delay)
	}

	// A plain object, as another user or tool would create it: limbo does not
	// manage it, and the old countdown does not touch it.
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		b, deadline := inLimbo(t, ns)
		u := createObject(t, ns, configMap("db", map[string]any{"new": "yes"}, nil))
		uid := string(u.GetUID())
		testenv.Consistently(t, time.Until(deadline)+2*time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))
		cur := noPendingDeletions(t, b)
		if err := conditionIs(cur, "Ready", metav1.ConditionTrue, ""); err != nil {
			t.Error(err)
		}
		u = getObject(t, configMapGVK, ns, "db")
		if len(u.GetOwnerReferences()) != 0 || len(u.GetLabels()) != 0 || len(u.GetAnnotations()) != 0 {
			t.Errorf("limbo touched the new db: %v", u.Object["metadata"])
		}
	})

	// The same object again, with the Bundle's label, its controller reference
	// and a delay (as a restore from a backup would bring it back): it is an orphan
	// of the Bundle, but a new one, so its countdown starts afresh.
	t.Run("restored", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		b, deadline := inLimbo(t, ns)
		// The Bundle does not bring back what it no longer declares; and the new
		// object is stamped in a later second than the old one, so that the two
		// deadlines differ.
		testenv.Consistently(t, time.Until(deadline.Add(-delay+time.Second)), noObject(configMapGVK, ns, "db"))
		obj := configMap("db", map[string]any{"new": "yes"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})
		u := &unstructured.Unstructured{Object: obj}
		u.SetLabels(map[string]string{limbov1alpha1.LabelBundle: b.Name})
		u.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: b.Name, UID: b.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}})
		created := time.Now()
		u = createObject(t, ns, u.Object)
		uid := string(u.GetUID())
		gone := watchConfigMapDeletion(t, ns, "db")

		_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
		if stamp.Before(created.Truncate(time.Second)) || !stamp.Add(delay).After(deadline) {
			t.Fatalf("the new db carries stamp %s; it was created at %s, after the old deadline %s was set", stamp, created, deadline)
		}
		newDeadline := stamp.Add(delay)
		testenv.Consistently(t, time.Until(deadline)+time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))
		// It goes at its own deadline, not before (the watch saw when).
		at := gone.wait(t, testenv.DefaultTimeout)
		if at.Before(newDeadline) {
			t.Fatalf("the new db was deleted at %s, before its deadline %s", at.Format(time.RFC3339Nano), newDeadline)
		}
		if late := at.Sub(newDeadline); late > 5*time.Second {
			t.Errorf("the new db was deleted %v after its deadline", late)
		}
		noPendingDeletions(t, b)
	})
}
