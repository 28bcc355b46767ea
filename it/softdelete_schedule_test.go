package it

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object with a deletion delay that leaves its Bundle is stamped, listed in
// pendingDeletions, kept until its deadline and deleted right after it.
func TestSoftDeleteScheduleThenDelete(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// Long enough that db is still in limbo, listed in pendingDeletions, when
	// the test looks, under load: the stamp is rounded to the second.
	const delay = 10 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "sd", keep,
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	waitReady(t, b)
	gone := watchConfigMapDeletion(t, ns, "db")

	updateBundle(t, b, keep)
	stamped := waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		if u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "" || u.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "true" {
			return fmt.Errorf("not stamped yet: %v %v", u.GetAnnotations(), u.GetLabels())
		}
		return nil
	})
	stamp, err := time.Parse(time.RFC3339, stamped.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatalf("stamp: %v", err)
	}
	deadline := stamp.Add(delay)
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 {
			return fmt.Errorf("pendingDeletions = %+v", cur.Status.PendingDeletions)
		}
		return nil
	})
	pd := cur.Status.PendingDeletions[0]
	if pd.Kind != "ConfigMap" || pd.Name != "db" || pd.DeleteAfter == nil || !pd.DeleteAfter.Time.Equal(deadline) {
		t.Errorf("pendingDeletions[0] = %+v, want ConfigMap db deleted after %s", pd, deadline)
	}
	if cur.Status.PendingDeletionCount != 1 || cur.Status.NextDeletion == nil || !cur.Status.NextDeletion.Time.Equal(deadline) {
		t.Errorf("pendingDeletionCount/nextDeletion = %d/%v, want 1/%s", cur.Status.PendingDeletionCount, cur.Status.NextDeletion, deadline)
	}
	// Not before the deadline (the watch saw when: a poll window that a loaded
	// machine reached late would prove nothing)...
	at := gone.wait(t, testenv.DefaultTimeout)
	if at.Before(deadline) {
		t.Fatalf("db deleted at %s, before its deadline %s", at.Format(time.RFC3339Nano), deadline)
	}
	// ...and promptly after it (no resync needed).
	if late := at.Sub(deadline); late > 5*time.Second {
		t.Errorf("deleted %v after its deadline", late)
	}
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions still lists %+v", cur.Status.PendingDeletions)
		}
		return nil
	})
}
