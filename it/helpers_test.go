package it

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widgetGVK    = schema.GroupVersionKind{Group: "test.limbo.dev", Version: "v1", Kind: "Widget"}
)

// objectResource is a Bundle resource holding obj.
func objectResource(t testing.TB, name string, obj map[string]any, refs ...limbov1alpha1.Reference) limbov1alpha1.Resource {
	return limbov1alpha1.Resource{Name: name, References: refs, Object: rawObject(t, obj)}
}

// configMap is a ConfigMap template.
func configMap(name string, data map[string]any, annotations map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if annotations != nil {
		md["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}
}

// widget is a Widget template; tests drive its status.
func widget(name string) map[string]any {
	return map[string]any{"apiVersion": "test.limbo.dev/v1", "kind": "Widget", "metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)}}
}

func createBundle(t testing.TB, ns, name string, resources ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
	t.Helper()
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: limbov1alpha1.BundleSpec{Resources: resources}}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("create Bundle: %v", err)
	}
	return b
}

// updateBundle replaces the Bundle's resources, retrying on conflicts.
func updateBundle(t testing.TB, b *limbov1alpha1.Bundle, resources ...limbov1alpha1.Resource) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		cur.Spec.Resources = resources
		return env.Client.Update(context.Background(), &cur)
	})
}

func getBundle(t testing.TB, b *limbov1alpha1.Bundle) *limbov1alpha1.Bundle {
	t.Helper()
	var cur limbov1alpha1.Bundle
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
		t.Fatalf("get Bundle: %v", err)
	}
	return &cur
}

// waitBundle polls until check accepts the Bundle's current, observed status.
func waitBundle(t testing.TB, b *limbov1alpha1.Bundle, check func(*limbov1alpha1.Bundle) error) *limbov1alpha1.Bundle {
	t.Helper()
	var cur limbov1alpha1.Bundle
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("status observes generation %d, not %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		return check(&cur)
	})
	return &cur
}

func waitReady(t testing.TB, b *limbov1alpha1.Bundle) *limbov1alpha1.Bundle {
	t.Helper()
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error { return conditionIs(cur, "Ready", metav1.ConditionTrue, "") })
}

// conditionIs checks a condition's status and, when reason is not empty, reason.
func conditionIs(b *limbov1alpha1.Bundle, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(b.Status.Conditions, typ)
	if c == nil {
		return fmt.Errorf("no %s condition; conditions: %+v", typ, b.Status.Conditions)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

func resourceStatus(b *limbov1alpha1.Bundle, name string) *limbov1alpha1.ResourceStatus {
	for i := range b.Status.Resources {
		if b.Status.Resources[i].Name == name {
			return &b.Status.Resources[i]
		}
	}
	return nil
}

// resourceIs checks a resource's state and reason.
func resourceIs(b *limbov1alpha1.Bundle, name string, state limbov1alpha1.ResourceState, reason string) error {
	st := resourceStatus(b, name)
	if st == nil {
		return fmt.Errorf("no status for resource %q: %+v", name, b.Status.Resources)
	}
	if st.State != state || (reason != "" && st.Reason != reason) {
		return fmt.Errorf("resource %q is %s/%s (%s), want %s/%s", name, st.State, st.Reason, st.Message, state, reason)
	}
	return nil
}

// getObject reads an object straight from the API server; nil if it does not exist.
func getObject(t testing.TB, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatalf("get %s %s: %v", gvk.Kind, name, err)
	}
	return u
}

func waitObject(t testing.TB, gvk schema.GroupVersionKind, ns, name string, check func(*unstructured.Unstructured) error) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		u = getObject(t, gvk, ns, name)
		if u == nil {
			return fmt.Errorf("%s %s does not exist", gvk.Kind, name)
		}
		return check(u)
	})
	return u
}

func waitGone(t testing.TB, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if getObject(t, gvk, ns, name) != nil {
			return fmt.Errorf("%s %s still exists", gvk.Kind, name)
		}
		return nil
	})
}

// setWidgetReady writes a Widget's status the way its operator would.
func setWidgetReady(t testing.TB, ns, name string, ready bool) {
	t.Helper()
	status := "False"
	if ready {
		status = "True"
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		u := getObject(t, widgetGVK, ns, name)
		if u == nil {
			return fmt.Errorf("widget %s does not exist", name)
		}
		u.Object["status"] = map[string]any{
			"observedGeneration": u.GetGeneration(),
			"conditions":         []any{map[string]any{"type": "Ready", "status": status, "reason": "Test", "message": "set by the test"}},
		}
		return env.Client.Status().Update(context.Background(), u)
	})
}
