package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object removed from a Bundle is deleted only when every resource of the
// Bundle is Ready: a half rolled-out Bundle never deletes. Meanwhile the object
// is listed in status.pendingDeletions, saying what it waits for.
func TestOrphansDeletedOnlyWhenReady(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	gate := objectResource(t, "gate", widget("gate"))
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "orphans", gate, keep,
		objectResource(t, "x", configMap("x", map[string]any{"k": "v"}, nil)))
	waitReady(t, b)

	// The Widget's operator reports it not Ready: the Bundle is half rolled out.
	setWidgetReady(t, ns, "gate", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "gate", limbov1alpha1.ResourceInProgress, "Test")
	})

	updateBundle(t, b, gate, keep)
	wantPending := limbov1alpha1.PendingDeletion{
		APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "x",
		Message: "waiting for every resource of the Bundle to be Ready",
	}
	waiting := func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 || !jsonEqual(t, cur.Status.PendingDeletions[0], wantPending) {
			return fmt.Errorf("pendingDeletions = %+v, want [%+v]", cur.Status.PendingDeletions, wantPending)
		}
		if cur.Status.PendingDeletionCount != 1 {
			return fmt.Errorf("pendingDeletionCount = %d, want 1", cur.Status.PendingDeletionCount)
		}
		return conditionIs(cur, "Ready", metav1.ConditionFalse, "Progressing")
	}
	waitBundle(t, b, waiting)
	x := getObject(t, configMapGVK, ns, "x")
	testenv.Consistently(t, 3*time.Second, func() error {
		now := getObject(t, configMapGVK, ns, "x")
		switch {
		case now == nil:
			return fmt.Errorf("ConfigMap x was deleted while the Bundle is not Ready")
		case now.GetDeletionTimestamp() != nil:
			return fmt.Errorf("ConfigMap x is being deleted while the Bundle is not Ready")
		case now.GetResourceVersion() != x.GetResourceVersion():
			return fmt.Errorf("ConfigMap x was written while the Bundle is not Ready: %v", now.Object)
		}
		return waiting(getBundle(t, b))
	})

	setWidgetReady(t, ns, "gate", true)
	waitGone(t, configMapGVK, ns, "x")
	ready := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions = %+v, want none once x is gone", cur.Status.PendingDeletions)
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "Ready")
	})
	if ready.Status.PendingDeletionCount != 0 || ready.Status.NextDeletion != nil {
		t.Errorf("pendingDeletionCount = %d, nextDeletion = %v, want 0 and none", ready.Status.PendingDeletionCount, ready.Status.NextDeletion)
	}
	if getObject(t, configMapGVK, ns, "keep") == nil {
		t.Error("ConfigMap keep, still declared, was deleted")
	}
}

// A resource in Error is not Ready either: its Bundle deletes nothing.
func TestOrphansKeptWhileAResourceIsInError(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "orphans", keep, objectResource(t, "x", configMap("x", map[string]any{"k": "v"}, nil)))
	waitReady(t, b)
	taken := createObject(t, ns, configMap("taken", map[string]any{"k": "theirs"}, nil))

	conflict := objectResource(t, "taken", configMap("taken", map[string]any{"k": "v"}, nil))
	updateBundle(t, b, keep, conflict)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "taken", limbov1alpha1.ResourceError, "NotOwned"); err != nil {
			return err
		}
		if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "x" {
			return fmt.Errorf("pendingDeletions = %+v, want x", cur.Status.PendingDeletions)
		}
		return nil
	})
	testenv.Consistently(t, 3*time.Second, func() error {
		if now := getObject(t, configMapGVK, ns, "x"); now == nil || now.GetDeletionTimestamp() != nil {
			return fmt.Errorf("ConfigMap x deleted while a resource is in Error")
		}
		return nil
	})

	// The conflict resolved (the test gives up its object), everything is
	// Ready and x goes.
	deleteObject(t, taken)
	testenv.Eventually(t, 60*time.Second, func() error { return noObject(configMapGVK, ns, "x")() })
	waitReady(t, b)
}
