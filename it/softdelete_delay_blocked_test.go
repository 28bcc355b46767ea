package it

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A delay added to a template while its resource is Blocked reaches the live
// object at once (removing the object next must not delete it at once), and,
// once the resource is applied again, is the template's to take away: dropped
// from the template, it goes from the object. Written by a merge patch of the
// pass's, another field manager's than the apply's, it stayed for the object's
// life — server-side apply keeps a field another manager owns.
func TestSoftDeleteDelayAddedWhileBlocked(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	createWidget(t, ns, "gate", true)
	gate := objectResource(t, "gate", withAnnotations(widget("gate"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"}))
	db := func(annotations map[string]any) limbov1alpha1.Resource {
		return objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, annotations), limbov1alpha1.Reference{Resource: "gate"})
	}
	b := waitReady(t, createBundle(t, ns, "kept", gate, db(nil)))
	delayIs := func(want string) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error {
			if got, ok := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != want || (want == "") == ok {
				return fmt.Errorf("ConfigMap db's delay %q (set: %v), want %q; managed %v", got, ok, want, managers(u))
			}
			return nil
		}
	}

	setWidgetReady(t, ns, "gate", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	updateBundle(t, getBundle(t, b), gate, db(map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	waitObject(t, configMapGVK, ns, "db", delayIs("1h")) // Blocked: the delay alone

	setWidgetReady(t, ns, "gate", true)
	waitReady(t, b)
	updateBundle(t, getBundle(t, b), gate, db(nil))
	waitObject(t, configMapGVK, ns, "db", delayIs(""))

	// Reverted while still Blocked: the template is again the one last
	// applied, which skipped the apply as up to date, and the kept delay
	// stayed.
	setWidgetReady(t, ns, "gate", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	updateBundle(t, getBundle(t, b), gate, db(map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	waitObject(t, configMapGVK, ns, "db", delayIs("1h"))
	updateBundle(t, getBundle(t, b), gate, db(nil))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	setWidgetReady(t, ns, "gate", true)
	waitReady(t, b)
	waitObject(t, configMapGVK, ns, "db", delayIs(""))
}

// managers is u's field managers, with their operations and field sets.
func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, m := range u.GetManagedFields() {
		fields := ""
		if m.FieldsV1 != nil {
			fields = m.FieldsV1.GetRawString()
		}
		out = append(out, m.Manager+"/"+string(m.Operation)+":"+fields)
	}
	return out
}
