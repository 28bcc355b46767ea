package it

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
)

// An admission policy that removes limbo.dev/deletionDelay from what limbo
// writes (an "allowed annotations" mutation, a webhook) left the object Ready
// with no delay, and removing it from its Bundle then deleted it at once. The
// answer to the apply is checked against the template: the resource is an
// Error that says so, until the object keeps the delay — then it is Ready, and
// removing it counts down.
func TestSoftDeleteDelayStrippedByAdmission(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	stopStripping := stripAnnotation(t, ns, limbov1alpha1.AnnotationDeletionDelay, admissionregistrationv1.Create, admissionregistrationv1.Update)

	db := objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "stripped", db, keep)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "db", limbov1alpha1.ResourceError, limbov1alpha1.ReasonDeletionDelayNotKept); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionFalse, "")
	})
	waitEventContaining(t, b, "Warning", limbov1alpha1.ReasonDeletionDelayNotKept, `resource "db"`, `"1h"`)

	// The policy gone, the next apply puts the delay on.
	stopStripping()
	waitReady(t, b)
	waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != "1h" {
			return fmt.Errorf("ConfigMap db's delay %q, want 1h", got)
		}
		return nil
	})
	updateBundle(t, getBundle(t, b), keep)
	waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		if u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
			return fmt.Errorf("ConfigMap db not stamped: %v", u.GetAnnotations())
		}
		return nil
	})
}

// A policy that strips the delay when an object is created, not when it is
// updated, costs the object its delay until the next apply, which puts it back.
func TestSoftDeleteDelayStrippedOnCreateOnly(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	stripAnnotation(t, ns, limbov1alpha1.AnnotationDeletionDelay, admissionregistrationv1.Create)

	b := createBundle(t, ns, "stripped", objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})))
	waitReady(t, b)
	if got := getObject(t, configMapGVK, ns, "db").GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != "1h" {
		t.Fatalf("Bundle Ready with ConfigMap db's delay %q, want 1h", got)
	}
	waitEventContaining(t, b, "Warning", limbov1alpha1.ReasonDeletionDelayNotKept, `resource "db"`)
}

// stripAnnotation makes the API server remove annotation key from the
// ConfigMaps of ns on operations, with a MutatingAdmissionPolicy (no webhook
// server to run), once it is in force. The returned func removes it, and waits
// until it no longer is; cleanup removes it too.
func stripAnnotation(t *testing.T, ns, key string, operations ...admissionregistrationv1.OperationType) (stop func()) {
	t.Helper()
	ctx := context.Background()
	name := "strip-" + strings.NewReplacer("/", "-", ".", "-").Replace(strings.ToLower(key)) + "-" + ns
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: operations,
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}},
			},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `has(object.metadata.annotations) && "` + key + `" in object.metadata.annotations ? ` +
					`[JSONPatch{op: "remove", path: "/metadata/annotations/" + jsonpatch.escapeKey("` + key + `")}] : []`},
			}},
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatalf("create MutatingAdmissionPolicy: %v", err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatalf("create MutatingAdmissionPolicyBinding: %v", err)
	}
	remove := func() {
		for _, err := range []error{env.Client.Delete(ctx, binding), env.Client.Delete(ctx, policy)} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete the policy stripping %s: %v", key, err)
			}
		}
	}
	t.Cleanup(remove)

	// In force once a probe written with the annotation — created with it, or
	// updated to have it when the policy acts on updates — comes back without.
	onUpdate := slices.Contains(operations, admissionregistrationv1.Update)
	probe := 0
	stripped := func() (bool, error) {
		probe++
		u := &unstructured.Unstructured{Object: configMap(fmt.Sprintf("probe-%d", probe), nil, nil)}
		u.SetNamespace(ns)
		if !onUpdate {
			u.SetAnnotations(map[string]string{key: "1h"})
		}
		if err := env.Client.Create(ctx, u); err != nil {
			return false, err
		}
		defer func() { _ = env.Client.Delete(ctx, u) }()
		if onUpdate {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"1h"}}}`, key)
			if err := env.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				return false, err
			}
		}
		_, kept := u.GetAnnotations()[key]
		return !kept, nil
	}
	probeIs := func(want bool) func() error {
		return func() error {
			got, err := stripped()
			if err == nil && got != want {
				err = fmt.Errorf("a ConfigMap written in %s loses its %s: %v, want %v", ns, key, got, want)
			}
			return err
		}
	}
	testenv.Eventually(t, testenv.DefaultTimeout, probeIs(true))
	return func() {
		t.Helper()
		remove()
		testenv.Eventually(t, testenv.DefaultTimeout, probeIs(false))
	}
}

// An admission policy that removes limbo's stamp from what limbo writes left a
// countdown that started anew at every pass — each announced "deleted at …",
// none kept — and said nothing of why. The answer to the stamp is checked: the
// object's pendingDeletions entry says what happened, and no DeletionScheduled
// names a deadline.
func TestSoftDeleteStampStrippedByAdmission(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	stripAnnotation(t, ns, limbov1alpha1.AnnotationDeletionTimestamp, admissionregistrationv1.Update)

	db := objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := waitReady(t, createBundle(t, ns, "stamp", db, keep))
	updateBundle(t, getBundle(t, b), keep)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, pd := range cur.Status.PendingDeletions {
			if pd.Name == "db" {
				if !strings.Contains(pd.Message, "has no annotation "+limbov1alpha1.AnnotationDeletionTimestamp) || !strings.Contains(pd.Message, "admission webhook or policy") {
					return fmt.Errorf("db's entry says %q", pd.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("no pendingDeletions entry for db: %+v", cur.Status.PendingDeletions)
	})
	for _, e := range events(t, b) {
		if e.Reason == limbov1alpha1.EventDeletionScheduled {
			t.Errorf("a deadline announced that no one keeps: %s", e.Message)
		}
	}
}

// The same for an object a generator plugin makes, whose delay is its plugin
// resource's deletionDelay, which no template states.
func TestSoftDeleteGeneratedDelayStrippedByAdmission(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	stripAnnotation(t, ns, limbov1alpha1.AnnotationDeletionDelay, admissionregistrationv1.Create, admissionregistrationv1.Update)

	b := createBundle(t, ns, "generated", limbov1alpha1.Resource{Name: "settings", Plugin: &limbov1alpha1.PluginResource{Name: configmap.Name,
		DeletionDelay: "1h", Spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"app-settings","data":{"LOG_LEVEL":"info"}}`)}}})
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "settings", limbov1alpha1.ResourceError, limbov1alpha1.ReasonDeletionDelayNotKept)
	})
}
