package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A declared object that someone deletes, and that a finalizer keeps
// Terminating, is reported Deleting (BeingDeleted) for as long as it takes: it is
// not Ready — an apply would only touch an object on its way out — so the Bundle
// is not Ready and what depends on it waits. Once it is really gone it is
// created again (a new object, a new UID) and the Bundle is Ready again.
func TestBundleObjectBeingDeletedIsRecreatedOnceGone(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "deleting",
		objectResource(t, "settings", configMap("settings", map[string]any{"k": "v"}, nil)),
		objectResource(t, "app", configMap("app", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "settings"}),
	)
	waitReady(t, b)
	old := getObject(t, configMapGVK, ns, "settings")

	release := holdConfigMap(t, ns, "settings")
	deleteObject(t, old)

	deleting := func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "settings", limbov1alpha1.ResourceDeleting, limbov1alpha1.ReasonBeingDeleted,
			`ConfigMap "settings" is being deleted; it is re-created once it is gone`); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "app", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady, `waiting for "settings"`); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionFalse, "")
	}
	waitBundle(t, b, deleting)
	// It stays so across the 2 s rechecks while the finalizer holds the object:
	// the held object is the old one, still Terminating.
	testenv.Consistently(t, 5*time.Second, func() error {
		held := getObject(t, configMapGVK, ns, "settings")
		if held == nil || held.GetUID() != old.GetUID() || held.GetDeletionTimestamp() == nil {
			return fmt.Errorf("settings is no longer the old object being deleted: %v", held)
		}
		return deleting(getBundle(t, b))
	})

	release()
	u := waitObject(t, configMapGVK, ns, "settings", func(u *unstructured.Unstructured) error {
		if u.GetUID() == old.GetUID() {
			return fmt.Errorf("settings is still the old object (uid %s)", u.GetUID())
		}
		return nil
	})
	ready := waitReady(t, b)
	if err := isControlledBy(u, ready); err != nil {
		t.Error(err)
	}
	if st := resourceStatus(ready, "settings"); st.Object == nil || st.Object.UID != string(u.GetUID()) {
		t.Errorf("status of settings names object %+v, want the new uid %s", st.Object, u.GetUID())
	}
}
