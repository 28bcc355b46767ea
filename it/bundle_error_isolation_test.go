package it

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An error in one resource does not stop independent ones: they are created and
// become Ready; only the resources that depend on the failed one are Blocked.
func TestErrorIsolation(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	taken := createObject(t, ns, configMap("taken", map[string]any{"owner": "someone"}, nil))
	b := createBundle(t, ns, "isolation",
		objectResource(t, "taken", configMap("taken", map[string]any{"owner": "limbo"}, nil)),
		objectResource(t, "after-taken", configMap("after-taken", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "taken"}),
		objectResource(t, "free", configMap("free", map[string]any{"host": "free.internal"}, nil)),
		objectResource(t, "after-free", configMap("after-free", map[string]any{"url": "http://!{host}/"}, nil),
			limbov1alpha1.Reference{Name: "host", Resource: "free", Path: "data.host"}),
	)
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "taken", limbov1alpha1.ResourceError, "NotOwned", notOwnedMessage); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "after-taken", limbov1alpha1.ResourceBlocked, "DependenciesNotReady", `waiting for "taken"`); err != nil {
			return err
		}
		for _, name := range []string{"free", "after-free"} {
			if err := resourceIs(cur, name, limbov1alpha1.ResourceReady, ""); err != nil {
				return err
			}
		}
		if cur.Status.ResourcesReady != "2/4" {
			return fmt.Errorf("resourcesReady = %q, want 2/4", cur.Status.ResourcesReady)
		}
		return nil
	})
	msg := `resource "taken": ` + notOwnedMessage
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{"Ready", metav1.ConditionFalse}, {"Stalled", metav1.ConditionTrue}} {
		if err := conditionMessageIs(cur, c.typ, c.status, "ResourceError", msg); err != nil {
			t.Error(err)
		}
	}
	if err := conditionIs(cur, "Reconciling", metav1.ConditionFalse, "ResourceError"); err != nil {
		t.Error(err)
	}
	if got := stringField(getObject(t, configMapGVK, ns, "after-free"), "data", "url"); got != "http://free.internal/" {
		t.Errorf("after-free data.url = %q, want http://free.internal/", got)
	}
	if getObject(t, configMapGVK, ns, "after-taken") != nil {
		t.Error("ConfigMap after-taken was created although its dependency is in Error")
	}
	if got := getObject(t, configMapGVK, ns, "taken"); stringField(got, "data", "owner") != "someone" || len(got.GetOwnerReferences()) != 0 || got.GetResourceVersion() != taken.GetResourceVersion() {
		t.Errorf("the conflicting object was touched: %v", got.Object)
	}
}
