package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Cancelling is always safe, so it does not wait for the Bundle to be Ready: objects
// in limbo that are re-added while a Widget of the Bundle is not Ready lose their
// stamp at once — one independent of the Widget, one that depends on it and is
// Blocked — and their countdown does not resume when the Bundle is Ready again.
func TestSoftDeleteCancelWhileNotReady(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// Long enough for the steps before the re-add on a loaded machine: the
	// re-add must come before the countdowns end for the test to mean anything.
	const delay = 30 * time.Second
	w := objectResource(t, "w", widget("w"))
	delayed := map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()}
	db := func() limbov1alpha1.Resource {
		return objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, delayed))
	}
	cache := func() limbov1alpha1.Resource {
		return objectResource(t, "cache", configMap("cache", map[string]any{"a": "b"}, delayed), limbov1alpha1.Reference{Resource: "w"})
	}
	b := createBundle(t, ns, "cancel-not-ready", w, db(), cache())
	setWidgetReady(t, ns, "w", true)
	b = waitReady(t, b)
	uids := map[string]string{}
	for _, name := range []string{"db", "cache"} {
		uids[name] = string(getObject(t, configMapGVK, ns, name).GetUID())
	}

	updateBundle(t, b, w)
	_, dbStamp := waitInLimbo(t, configMapGVK, ns, "db")
	_, cacheStamp := waitInLimbo(t, configMapGVK, ns, "cache")
	earliest, deadline := dbStamp.Add(delay), cacheStamp.Add(delay)
	if cacheStamp.Before(dbStamp) {
		earliest, deadline = deadline, earliest
	}

	// The rest of the Bundle stops being Ready, then the objects come back.
	setWidgetReady(t, ns, "w", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error { return conditionIs(cur, "Ready", metav1.ConditionFalse, "") })
	// Timed at the re-add, with the soak's margin for a delete decided a
	// moment before it (redeclareGuard), against the countdown that ends
	// first: what comes after may be slow without changing the verdict.
	if readdAt := time.Now(); readdAt.After(earliest.Add(-1500 * time.Millisecond)) {
		t.Fatalf("the test was too slow: the objects are declared again at %s, within 1.5 s of the first deadline %s", readdAt.Format(time.RFC3339Nano), earliest)
	}
	updateBundle(t, b, w, db(), cache())
	for _, name := range []string{"db", "cache"} {
		waitObject(t, configMapGVK, ns, name, notInLimbo)
		waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", fmt.Sprintf("ConfigMap %s/%s is desired again: deletion cancelled", ns, name))
	}
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionIs(cur, "Ready", metav1.ConditionFalse, ""); err != nil {
			return err
		}
		if err := resourceIs(cur, "cache", limbov1alpha1.ResourceBlocked, "DependenciesNotReady"); err != nil {
			return err
		}
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions still lists %+v", cur.Status.PendingDeletions)
		}
		return nil
	})
	if err := resourceIs(cur, "w", limbov1alpha1.ResourceInProgress, ""); err != nil {
		t.Error(err)
	}

	// Ready again: nothing resumes the old countdowns.
	setWidgetReady(t, ns, "w", true)
	waitReady(t, b)
	testenv.Consistently(t, time.Until(deadline)+2*time.Second, func() error {
		for name, uid := range uids {
			if err := existsWithUID(t, configMapGVK, ns, name, uid)(); err != nil {
				return err
			}
			if err := notInLimbo(getObjectOrEmpty(t, ns, name)); err != nil {
				return err
			}
		}
		return nil
	})
}
