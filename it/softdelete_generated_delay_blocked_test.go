package it

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
)

// A deletionDelay put on a generator's plugin resource while the resource is
// Blocked reaches the objects it generated at once, as a template's delay
// does (TestSoftDeleteDelayAddedWhileBlocked): "put the delay on, then remove
// it" holds for a generated object too. It did not: a Blocked generator
// applies nothing, and its objects were found without a delay by the removal
// that followed — the resource taken out of the spec the moment its
// dependency was Ready again, and the ConfigMap deleted at once.
func TestSoftDeleteGeneratorDelayAddedWhileBlocked(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	createWidget(t, ns, "gate", true)
	gate := objectResource(t, "gate", withAnnotations(widget("gate"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"}))
	settings := func(delay string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: "settings", References: []limbov1alpha1.Reference{{Resource: "gate"}},
			Plugin: &limbov1alpha1.PluginResource{Name: configmap.Name, DeletionDelay: delay,
				Spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"settings","data":{"LOG_LEVEL":"info"}}`)}}}
	}
	b := waitReady(t, createBundle(t, ns, "generated-kept", gate, settings("")))

	setWidgetReady(t, ns, "gate", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "settings", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	updateBundle(t, getBundle(t, b), gate, settings("1h"))
	waitObject(t, configMapGVK, ns, "settings", func(u *unstructured.Unstructured) error {
		if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != "1h" {
			return fmt.Errorf("the generated ConfigMap's delay is %q while its resource is Blocked, want the resource's 1h", got)
		}
		return nil
	})

	// Removed as its dependency is Ready again: in limbo for the hour.
	updateBundle(t, getBundle(t, b), gate)
	setWidgetReady(t, ns, "gate", true)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, p := range cur.Status.PendingDeletions {
			if p.Kind == "ConfigMap" && p.Name == "settings" && p.DeletionTimestamp != nil && p.DeleteAfter != nil &&
				p.DeleteAfter.Sub(p.DeletionTimestamp.Time) == time.Hour {
				return nil
			}
		}
		return fmt.Errorf("settings is not pending with a deadline an hour after its stamp: %+v", cur.Status.PendingDeletions)
	})
	if getObject(t, configMapGVK, ns, "settings") == nil {
		t.Fatal("the generated ConfigMap was deleted")
	}
}
