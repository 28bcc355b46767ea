package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A plugin that fails is retried by the work queue with backoff: the Bundle is
// Reconciling, not Stalled, and the plan is called again and again, each time
// after a longer wait. A plugin that returns no result is an error like any
// other, not a crash.
func TestPluginFailureIsTransient(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.FailPlan(testplugin.ErrInjected)
	b := createBundle(t, ns, "shop", pluginResource("items", ns, "1h"))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "items", limbov1alpha1.ResourceError, "PluginFailed"); err != nil {
			return err
		}
		if err := conditionIs(cur, "Stalled", metav1.ConditionFalse, "ProgressingWithRetry"); err != nil {
			return err
		}
		return conditionIs(cur, "Reconciling", metav1.ConditionTrue, "ProgressingWithRetry")
	})
	// The conditions say a retry comes whether or not one does; the domain's
	// Plan calls show it: the last three waits between them grow, each at
	// least half as long again as the one before (the work queue doubles
	// them, from 5ms), and the last is longer than the machine's jitter.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		calls := domain.PlanCalls()
		var gaps []time.Duration
		for i := 1; i < len(calls); i++ {
			gaps = append(gaps, calls[i].Sub(calls[i-1]))
		}
		if n := len(gaps); n < 3 || gaps[n-1] < 40*time.Millisecond ||
			2*gaps[n-1] < 3*gaps[n-2] || 2*gaps[n-2] < 3*gaps[n-3] {
			return fmt.Errorf("%d Plan calls, the last waits between them %v: want the last three growing (backoff)", len(calls), gaps[max(len(gaps)-5, 0):])
		}
		return nil
	})

	domain.FailPlan(nil)
	domain.ReturnNothing(true)
	const msg = `plugin "test-external": the plugin returned no result`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceError, "PluginFailed", msg)
	})
	domain.ReturnNothing(false)
	waitReady(t, b)
}

// Every kind a plugin generated is found when the plugin resource leaves the
// Bundle, not only the kind of its first object: each goes into limbo for the
// resource's hour (the delay written on the objects it generated).
func TestPluginGeneratedKindsAreAllCleanedUp(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Generate(
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "gen-config"}, "data": map[string]any{"k": "v"}}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "gen-secret"}, "stringData": map[string]any{"k": "v"}}},
	)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "shop", keep, pluginResource("items", ns, "1h"))
	waitReady(t, b)
	getObjectOrFail := func(gvk schema.GroupVersionKind, name string) {
		if getObject(t, gvk, ns, name) == nil {
			t.Fatalf("%s %s was not generated", gvk.Kind, name)
		}
	}
	getObjectOrFail(configMapGVK, "gen-config")
	getObjectOrFail(secretGVK, "gen-secret")

	updateBundle(t, b, keep)
	for _, o := range []struct {
		gvk  schema.GroupVersionKind
		name string
	}{{configMapGVK, "gen-config"}, {secretGVK, "gen-secret"}} {
		waitObject(t, o.gvk, ns, o.name, func(u *unstructured.Unstructured) error {
			if _, stamped := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; !stamped {
				return fmt.Errorf("%s %s, no longer generated, is not in limbo", o.gvk.Kind, o.name)
			}
			return nil
		})
	}
}

// bundleControllerCounter is the in-process controller's counter name, for the
// Bundle controller.
func bundleControllerCounter(t testing.TB, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "bundle" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// A plugin that generates a cluster-scoped object gets its resource's Error
// ClusterScoped, as a template of that kind is a spec error: owned by a
// namespaced Bundle, the object would be one the garbage collector ignores and
// no listing of the Bundle's namespace finds — never cleaned up. Nothing is
// created.
func TestPluginGeneratedClusterScopedObjectIsRefused(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	name := ns + "-gen"
	domain.Generate(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
		"metadata": map[string]any{"name": name}, "value": int64(1000)}})
	b := createBundle(t, ns, "shop", pluginResource("items", ns, "1h"))
	msg := fmt.Sprintf(`plugin "test-external" generated PriorityClass %q: PriorityClass is cluster-scoped; a Bundle holds namespaced objects only`, name)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceError, limbov1alpha1.ReasonClusterScoped, msg)
	})
	if err := noObject(schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}, "", name)(); err != nil {
		t.Error(err)
	}
}

// A plugin that generates one of limbo's own kinds (a Bundle) gets its resource's
// Error InvalidObject, as a template of that kind is a spec error: limbo writes
// its own kinds as itself, never as the Bundle's ServiceAccount, so a generated
// Bundle would be one its author may not have been allowed to create. Nothing is
// created.
func TestPluginGeneratedBundleIsRefused(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Generate(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "limbo.dev/v1alpha1", "kind": "Bundle",
		"metadata": map[string]any{"name": "inner"}, "spec": map[string]any{"resources": []any{}}}})
	b := createBundle(t, ns, "shop", pluginResource("items", ns, "1h"))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidObject,
			`plugin "test-external" generated Bundle "inner": a Bundle cannot hold a Bundle`)
	})
	if err := noObject(limbov1alpha1.BundleGVK, ns, "inner")(); err != nil {
		t.Error(err)
	}
}

// A plugin that generates an object in another namespace than its Bundle's gets
// its resource's Error PluginFailed, naming the object and the namespace: a
// Bundle's objects live in its own namespace (owned by a namespaced Bundle, an
// object elsewhere is one the garbage collector deletes at once as its owner's
// dangling reference, and that no listing of the Bundle's namespace finds).
// Nothing is created there.
func TestPluginGeneratedObjectInAnotherNamespaceIsRefused(t *testing.T) {
	t.Parallel()
	ns, other := env.Namespace(t), env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Generate(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "gen", "namespace": other}, "data": map[string]any{"k": "v"}}})
	b := createBundle(t, ns, "shop", pluginResource("items", ns, "1h"))
	msg := fmt.Sprintf(`plugin "test-external" generated ConfigMap "gen" in namespace %q; a Bundle's objects live in its own namespace`, other)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed, msg)
	})
	for _, namespace := range []string{other, ns} {
		if err := noObject(configMapGVK, namespace, "gen")(); err != nil {
			t.Error(err)
		}
	}
}
