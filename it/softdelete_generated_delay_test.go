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

// A generator plugin's object that it no longer generates waits the plugin
// resource's deletionDelay, as every orphan of the resource does: renaming the
// generated ConfigMap puts the old one in limbo for an hour, and naming it again
// takes it out. Until 2026-11-25 the old one was deleted at once — the delay
// applied to a cleanup plugin's object items only.
func TestGeneratedObjectWaitsTheResourceDelay(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	settings := func(name string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: "settings", Plugin: &limbov1alpha1.PluginResource{Name: configmap.Name, DeletionDelay: "1h",
			Spec: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"name":%q,"data":{"LOG_LEVEL":"info"}}`, name)}}}
	}
	b := createBundle(t, ns, "generated-delay", settings("settings-a"))
	waitReady(t, b)
	if got := getObject(t, configMapGVK, ns, "settings-a").GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != "1h" {
		t.Fatalf("the generated ConfigMap's %s = %q, want the resource's 1h", limbov1alpha1.AnnotationDeletionDelay, got)
	}

	updateBundle(t, b, settings("settings-b"))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, p := range cur.Status.PendingDeletions {
			if p.Kind == "ConfigMap" && p.Name == "settings-a" && p.DeletionTimestamp != nil && p.DeleteAfter != nil &&
				p.DeleteAfter.Sub(p.DeletionTimestamp.Time) == time.Hour {
				return nil
			}
		}
		return fmt.Errorf("settings-a is not pending with a deadline an hour after its stamp: %+v", cur.Status.PendingDeletions)
	})
	waitObject(t, configMapGVK, ns, "settings-a", func(u *unstructured.Unstructured) error {
		if _, stamped := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; !stamped || u.GetDeletionTimestamp() != nil {
			return fmt.Errorf("settings-a is not waiting in limbo (annotations %v, deletionTimestamp %v)", u.GetAnnotations(), u.GetDeletionTimestamp())
		}
		return nil
	})
	if getObject(t, configMapGVK, ns, "settings-b") == nil {
		t.Fatal("the renamed ConfigMap settings-b does not exist")
	}

	updateBundle(t, b, settings("settings-a"))
	waitObject(t, configMapGVK, ns, "settings-a", func(u *unstructured.Unstructured) error {
		if _, stamped := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
			return fmt.Errorf("settings-a, generated again, is still stamped")
		}
		return nil
	})
	waitObject(t, configMapGVK, ns, "settings-b", func(u *unstructured.Unstructured) error {
		if _, stamped := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; !stamped {
			return fmt.Errorf("settings-b, no longer generated, is not in limbo")
		}
		return nil
	})
}

// The annotations a plugin puts on an object it generates are checked as a
// template's are: an invalid delay (once applied and left, the object would never
// be deleted) or a mark only the controller sets is the resource's error, and the
// object is not applied.
func TestGeneratedObjectWithInvalidAnnotationIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, annotation, value string
		reason, message         string
	}{
		{"invalid delay", limbov1alpha1.AnnotationDeletionDelay, "1 day", limbov1alpha1.ReasonInvalidDeletionDelay,
			`plugin "test-external" generated ConfigMap "gen-config" with limbo.dev/deletionDelay: invalid limbo.dev/deletionDelay "1 day": not a duration (Go syntax: 10m, 24h, 1h30m)`},
		// A generator's copy of a live object in limbo would carry its countdown.
		{"countdown mark", limbov1alpha1.AnnotationDeletionTimestamp, "2026-01-01T00:00:00Z", limbov1alpha1.ReasonProhibitedAnnotation,
			`plugin "test-external" generated ConfigMap "gen-config" with annotation "limbo.dev/deletionTimestamp", which only limbo sets`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			domain := external.Domain(ns)
			domain.Generate(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "gen-config", "annotations": map[string]any{tc.annotation: tc.value}}}})
			b := createBundle(t, ns, "shop", pluginResource("items", ns, ""))
			waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
				return resourceMessageIs(cur, "items", limbov1alpha1.ResourceError, tc.reason, tc.message)
			})
			if getObject(t, configMapGVK, ns, "gen-config") != nil {
				t.Error("the ConfigMap was applied")
			}
		})
	}
}
