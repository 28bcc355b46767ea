package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// Spec errors that admission cannot see (they need the API server's discovery,
// the graph, or limbo's own rules) are reported in status: Stalled=True with
// reason InvalidSpec, the offending resource in Error with its own reason and
// message, every other resource not processed, and nothing written at all.
func TestInvalidSpec(t *testing.T) {
	t.Parallel()
	plugin := func(name, delay string) *limbov1alpha1.PluginResource {
		return &limbov1alpha1.PluginResource{Name: name, DeletionDelay: delay, Spec: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}
	}
	cases := []struct {
		name string
		// bad returns the offending resources; other is a second namespace.
		bad    func(t *testing.T, ns, other string) []limbov1alpha1.Resource
		blame  string // the resource in Error
		reason string
		// message is the resource's message; several errors go one a line.
		message func(ns, other string) string
		// absent are objects the invalid resources name, which must not exist.
		absent func(ns, other string) []objectKey
	}{
		{
			name: "cluster-scoped kind",
			bad: func(t *testing.T, ns, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns + "-made-by-limbo"}})}
			},
			blame: "bad", reason: "ClusterScoped",
			message: func(string, string) string {
				return "object: Namespace is cluster-scoped; a Bundle holds namespaced objects only"
			},
			absent: func(ns, _ string) []objectKey { return []objectKey{{namespaceGVK, "", ns + "-made-by-limbo"}} },
		},
		{
			name: "another namespace",
			bad: func(t *testing.T, _, other string) []limbov1alpha1.Resource {
				cm := configMap("bad", map[string]any{"k": "v"}, nil)
				cm["metadata"].(map[string]any)["namespace"] = other
				return []limbov1alpha1.Resource{objectResource(t, "bad", cm)}
			},
			blame: "bad", reason: "WrongNamespace",
			message: func(ns, other string) string {
				return fmt.Sprintf("object: namespace %q is not the Bundle's namespace %q", other, ns)
			},
			absent: func(ns, other string) []objectKey {
				return []objectKey{{configMapGVK, other, "bad"}, {configMapGVK, ns, "bad"}}
			},
		},
		{
			name: "reference to a missing resource",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("bad", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "nowhere"})}
			},
			blame: "bad", reason: "MissingReference",
			message: func(string, string) string { return `references missing resource "nowhere"` },
			absent:  func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			name: "dependency cycle",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					objectResource(t, "a", configMap("a", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "b"}),
					objectResource(t, "b", configMap("b", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "a"}),
				}
			},
			blame: "a", reason: "DependencyCycle",
			message: func(string, string) string { return "dependency cycle: a -> b -> a" },
			absent:  func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "a"}, {configMapGVK, ns, "b"}} },
		},
		{
			name: "unknown plugin",
			bad: func(*testing.T, string, string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "bad", Plugin: plugin("no-such-plugin", "")}}
			},
			blame: "bad", reason: "UnknownPlugin",
			message: func(string, string) string {
				return `unknown plugin "no-such-plugin" (known: configmap, deorbit, namespace-gc, node-removal, route-gc, test-external, test-teardown)`
			},
		},
		{
			name: "invalid deletionDelay on a template",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("bad", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "tomorrow"}))}
			},
			blame: "bad", reason: "InvalidDeletionDelay",
			message: func(string, string) string {
				return `object: invalid limbo.dev/deletionDelay "tomorrow": not a duration (Go syntax: 10m, 24h, 1h30m)`
			},
			absent: func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			name: "negative deletionDelay on a template",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("bad", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "-5m"}))}
			},
			blame: "bad", reason: "InvalidDeletionDelay",
			message: func(string, string) string {
				return `object: invalid limbo.dev/deletionDelay "-5m": must not be negative`
			},
			absent: func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			// The plugin's name is unknown on purpose, so that the message does not
			// depend on which plugins are compiled in; the delay is reported first.
			name: "invalid deletionDelay on a plugin",
			bad: func(*testing.T, string, string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{{Name: "bad", Plugin: plugin("no-such-plugin", "tomorrow")}}
			},
			blame: "bad", reason: "InvalidDeletionDelay",
			message: func(string, string) string {
				return `invalid plugin.deletionDelay "tomorrow": not a duration (Go syntax: 10m, 24h, 1h30m)` + "\n" + `unknown plugin "no-such-plugin" (known: configmap, deorbit, namespace-gc, node-removal, route-gc, test-external, test-teardown)`
			},
		},
		{
			name: "template sets the prohibited deletionTimestamp annotation",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("bad", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionTimestamp: "2020-01-01T00:00:00Z"}))}
			},
			blame: "bad", reason: "ProhibitedAnnotation",
			message: func(string, string) string {
				return `object: annotation "limbo.dev/deletionTimestamp" is set by limbo only`
			},
			absent: func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			name: "template sets the prohibited pending-deletion label",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				cm := configMap("bad", map[string]any{"k": "v"}, nil)
				cm["metadata"].(map[string]any)["labels"] = map[string]any{limbov1alpha1.LabelPendingDeletion: "true"}
				return []limbov1alpha1.Resource{objectResource(t, "bad", cm)}
			},
			blame: "bad", reason: "ProhibitedAnnotation",
			message: func(string, string) string {
				return `object: label "limbo.dev/pending-deletion" is set by limbo only`
			},
			absent: func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			// Copied from a released object's YAML: once a --cascade=orphan delete
			// dropped its owner reference, the reaper would take it for released.
			name: "template sets the released annotation",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("bad", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationReleased: "2020-01-01T00:00:00Z"}))}
			},
			blame: "bad", reason: "ProhibitedAnnotation",
			message: func(string, string) string {
				return `object: annotation "limbo.dev/released" is set by limbo only`
			},
			absent: func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			name: "marker with no such reference",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("bad", map[string]any{"url": "http://!{x}/"}, nil), limbov1alpha1.Reference{Name: "y", Resource: "good", Path: "data.k"})}
			},
			blame: "bad", reason: "UndeclaredReference",
			message: func(string, string) string { return "uses undeclared references: !{x}" },
			absent:  func(ns, _ string) []objectKey { return []objectKey{{configMapGVK, ns, "bad"}} },
		},
		{
			name: "unknown kind",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", map[string]any{"apiVersion": "example.com/v1", "kind": "Nope", "metadata": map[string]any{"name": "bad"}})}
			},
			blame: "bad", reason: "UnknownKind",
			message: func(string, string) string { return `object: no matches for kind "Nope" in version "example.com/v1"` },
		},
		{
			name: "two resources declare the same object",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", configMap("good", map[string]any{"k": "other"}, nil))}
			},
			blame: "bad", reason: "DuplicateObject",
			message: func(string, string) string { return `declares the same object as resource "good": ConfigMap "good"` },
		},
		{
			name: "a Bundle inside a Bundle",
			bad: func(t *testing.T, _, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "bad", map[string]any{"apiVersion": "limbo.dev/v1alpha1", "kind": "Bundle", "metadata": map[string]any{"name": "inner"}})}
			},
			blame: "bad", reason: "InvalidObject",
			message: func(string, string) string { return "object: a Bundle cannot hold a Bundle" },
			absent: func(ns, _ string) []objectKey {
				return []objectKey{{limbov1alpha1.BundleGVK, ns, "inner"}}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns, other := env.Namespace(t), env.Namespace(t)
			good := objectResource(t, "good", configMap("good", map[string]any{"k": "v"}, nil))
			b := createBundle(t, ns, "invalid", append([]limbov1alpha1.Resource{good}, tc.bad(t, ns, other)...)...)
			// The resource's message joins its errors with "; "; the Bundle's names
			// the resource in each.
			errs := strings.Split(tc.message(ns, other), "\n")
			wantMsg := strings.Join(errs, "; ")
			named := make([]string, len(errs))
			for i, e := range errs {
				named[i] = fmt.Sprintf("resource %q: %s", tc.blame, e)
			}
			specMsg := "invalid spec: " + strings.Join(named, "; ")
			check := func(cur *limbov1alpha1.Bundle) error {
				if err := resourceMessageIs(cur, tc.blame, limbov1alpha1.ResourceError, tc.reason, wantMsg); err != nil {
					return err
				}
				if err := resourceMessageIs(cur, "good", limbov1alpha1.ResourceBlocked, "InvalidSpec", "not processed: the Bundle's spec is invalid"); err != nil {
					return err
				}
				if err := conditionMessageIs(cur, "Stalled", metav1.ConditionTrue, "InvalidSpec", specMsg); err != nil {
					return err
				}
				if err := conditionMessageIs(cur, "Ready", metav1.ConditionFalse, "InvalidSpec", specMsg); err != nil {
					return err
				}
				return conditionIs(cur, "Reconciling", metav1.ConditionFalse, "InvalidSpec")
			}
			waitBundle(t, b, check)
			absent := []objectKey{{configMapGVK, ns, "good"}}
			if tc.absent != nil {
				absent = append(absent, tc.absent(ns, other)...)
			}
			testenv.Consistently(t, 2*time.Second, func() error {
				for _, o := range absent {
					if err := noObject(o.gvk, o.namespace, o.name)(); err != nil {
						return fmt.Errorf("an invalid Bundle wrote: %w", err)
					}
				}
				return check(getBundle(t, b))
			})
			waitEvent(t, b, corev1.EventTypeWarning, "InvalidSpec", strings.Join(named, "; "))
		})
	}
}

type objectKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// A spec that turns invalid never deletes: an object removed from the spec in
// the same change survives, and the objects still declared are not updated,
// until the spec is fixed; then both happen.
func TestInvalidSpecDeletesNothing(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "turns-invalid",
		objectResource(t, "keep", configMap("keep", map[string]any{"v": "1"}, nil)),
		objectResource(t, "drop", configMap("drop", map[string]any{"v": "1"}, nil)),
	)
	waitReady(t, b)
	keep, drop := getObject(t, configMapGVK, ns, "keep"), getObject(t, configMapGVK, ns, "drop")

	// drop leaves the spec, keep changes, and a new resource is broken.
	updateBundle(t, b,
		objectResource(t, "keep", configMap("keep", map[string]any{"v": "2"}, nil)),
		objectResource(t, "broken", configMap("broken", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "nowhere"}),
	)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "broken", limbov1alpha1.ResourceError, "MissingReference", `references missing resource "nowhere"`); err != nil {
			return err
		}
		return conditionIs(cur, "Stalled", metav1.ConditionTrue, "InvalidSpec")
	})
	testenv.Consistently(t, 3*time.Second, func() error {
		for _, before := range []*unstructured.Unstructured{keep, drop} {
			now := getObject(t, configMapGVK, ns, before.GetName())
			switch {
			case now == nil:
				return fmt.Errorf("ConfigMap %s was deleted while the spec is invalid", before.GetName())
			case now.GetDeletionTimestamp() != nil:
				return fmt.Errorf("ConfigMap %s is being deleted while the spec is invalid", before.GetName())
			case now.GetResourceVersion() != before.GetResourceVersion():
				return fmt.Errorf("ConfigMap %s was written while the spec is invalid: %v", before.GetName(), now.Object)
			}
		}
		return noObject(configMapGVK, ns, "broken")()
	})

	// Fixed: keep is updated, drop (no deletion delay) is deleted.
	updateBundle(t, b, objectResource(t, "keep", configMap("keep", map[string]any{"v": "2"}, nil)))
	waitGone(t, configMapGVK, ns, "drop")
	ready := waitReady(t, b)
	if got := stringField(getObject(t, configMapGVK, ns, "keep"), "data", "v"); got != "2" {
		t.Errorf("keep data.v = %q, want 2", got)
	}
	if len(ready.Status.PendingDeletions) != 0 {
		t.Errorf("pendingDeletions = %+v, want none", ready.Status.PendingDeletions)
	}
}
