package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object in limbo that is put back into its Bundle before its deadline loses
// the stamp and the pending-deletion label (event DeletionCancelled), is kept past
// the original deadline, and leaves pendingDeletions.
func TestSoftDeleteCancelByReAdding(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// Long enough that db is put back before its deadline under load: the stamp
	// is rounded to the second, and the test waits for the countdown to show in
	// the Bundle's status first.
	const delay = 15 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	db := func() limbov1alpha1.Resource {
		return objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()}))
	}
	b := createBundle(t, ns, "cancel", keep, db())
	b = waitReady(t, b)
	original := getObject(t, configMapGVK, ns, "db")

	updateBundle(t, b, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	deadline := stamp.Add(delay)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 {
			return fmt.Errorf("pendingDeletions = %+v, want db", cur.Status.PendingDeletions)
		}
		return nil
	})

	updateBundle(t, b, keep, db())
	if time.Now().After(deadline) {
		t.Fatalf("the test was too slow: re-added db after its deadline %s", deadline)
	}
	u := waitObject(t, configMapGVK, ns, "db", notInLimbo)
	if u.GetUID() != original.GetUID() {
		t.Fatalf("db was re-created (uid %s, was %s): the countdown was not cancelled", u.GetUID(), original.GetUID())
	}
	if err := isControlledBy(u, b); err != nil {
		t.Error(err)
	}
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", fmt.Sprintf("ConfigMap %s/db is desired again: deletion cancelled", ns))
	noPendingDeletions(t, b)
	waitReady(t, b)

	// Kept past the original deadline: the countdown is really gone.
	testenv.Consistently(t, time.Until(deadline)+2*time.Second, func() error {
		if err := existsWithUID(t, configMapGVK, ns, "db", string(original.GetUID()))(); err != nil {
			return fmt.Errorf("after the cancel: %w", err)
		}
		return notInLimbo(getObjectOrEmpty(t, ns, "db"))
	})
	if got := getBundle(t, b).Status.PendingDeletions; len(got) != 0 {
		t.Errorf("pendingDeletions = %+v after the original deadline", got)
	}
}

// getObjectOrEmpty is the ConfigMap, or an empty object if it is gone (the caller
// checks existence separately).
func getObjectOrEmpty(t testing.TB, ns, name string) *unstructured.Unstructured {
	if u := getObject(t, configMapGVK, ns, name); u != nil {
		return u
	}
	return &unstructured.Unstructured{Object: map[string]any{}}
}
