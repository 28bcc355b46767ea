package it

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
)

// Two generators that make the same object: one of them is an error naming the
// object (DuplicateObject) and the object keeps the other's content, never
// rewritten back and forth — not even while the generator holding it is
// Blocked and does not plan, which leaves the other as the only one generating
// it in that pass.
func TestTwoGeneratorsDeclaringOneObject(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// Each generator waits for its own Widget, so that one can be Blocked while
	// the other runs; both start Ready (adopted with their status).
	createWidget(t, ns, "dep-first", true)
	createWidget(t, ns, "dep-second", true)
	adopt := map[string]any{limbov1alpha1.AnnotationAdopt: "true"}
	generator := func(name, source string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: name, References: []limbov1alpha1.Reference{{Resource: "dep-" + name}},
			Plugin: &limbov1alpha1.PluginResource{Name: configmap.Name,
				Spec: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"name":"shared","data":{"source":%q}}`, source)}}}
	}
	b := createBundle(t, ns, "twins",
		objectResource(t, "dep-first", withAnnotations(widget("dep-first"), adopt)),
		objectResource(t, "dep-second", withAnnotations(widget("dep-second"), adopt)),
		generator("first", "first"),
		generator("second", "second"),
	)
	const msg = `plugin "configmap" generated ConfigMap "shared", which resource "first" declares already`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "second", limbov1alpha1.ResourceError, limbov1alpha1.ReasonDuplicateObject, msg); err != nil {
			return err
		}
		if err := resourceIs(cur, "first", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		return conditionIs(cur, "Stalled", metav1.ConditionTrue, "ResourceError")
	})
	rv := getObject(t, configMapGVK, ns, "shared").GetResourceVersion()
	// untouched: shared keeps first's content and is not written at all.
	untouched := func() error {
		o := getObject(t, configMapGVK, ns, "shared")
		if o == nil {
			return fmt.Errorf("ConfigMap shared is gone")
		}
		if got := stringField(o, "data", "source"); got != "first" {
			return fmt.Errorf("data.source = %q: the other generator's apply won", got)
		}
		if o.GetResourceVersion() != rv {
			return fmt.Errorf("shared is rewritten (resourceVersion %s -> %s)", rv, o.GetResourceVersion())
		}
		return nil
	}
	// And stays so: no tug of war between the two.
	testenv.Consistently(t, 3*time.Second, untouched)

	// first Blocked: it does not plan, and second is the only generator of
	// shared in the pass that the Widget's change starts. shared is still
	// first's: second stays the duplicate.
	setWidgetReady(t, ns, "dep-first", false)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := untouched(); err != nil {
			return err
		}
		if err := resourceIs(cur, "first", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady); err != nil {
			return err
		}
		return resourceMessageIs(cur, "second", limbov1alpha1.ResourceError, limbov1alpha1.ReasonDuplicateObject, msg)
	})
	testenv.Consistently(t, 3*time.Second, untouched)

	// And back: first Ready again, nothing written either.
	setWidgetReady(t, ns, "dep-first", true)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "first", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		if err := resourceMessageIs(cur, "second", limbov1alpha1.ResourceError, limbov1alpha1.ReasonDuplicateObject, msg); err != nil {
			return err
		}
		return untouched()
	})
	testenv.Consistently(t, 3*time.Second, untouched)
}
