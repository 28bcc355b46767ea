package bundlespec

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Of several templates that name one object (a spec with a duplicate, which
// Parse refuses), the first readable one gives its delay and any one adopts
// it; a template that cannot be read decides for Declares (nothing is deleted
// on its account), not for DeclaresReadably, which names the first such.
func TestDeclarationsOfDuplicatesAndUnreadableTemplates(t *testing.T) {
	object := func(name, raw string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: []byte(raw)}}
	}
	b := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: "namespace-gc", DeletionDelay: "9h"}},
		object("broken", `{"kind":`),
		object("data", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"data","annotations":{"limbo.dev/deletionDelay":"1h"}}}`),
		object("data-again", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"data","annotations":{"limbo.dev/deletionDelay":"2h","limbo.dev/adopt":"true"}}}`),
		object("broken-too", `[`),
		object("audit", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"audit","annotations":{"limbo.dev/deletionDelay":"3h"}}}`),
	}}}
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	for _, tc := range []struct {
		gk         schema.GroupKind
		name       string
		declares   Declaration
		readably   Declaration
		unreadable string // the resource DeclaresReadably's error names ("": no error)
		delay      string
	}{
		{configMap, "data", DeclaredToAdopt, DeclaredToAdopt, "", "1h"},
		{schema.GroupKind{Kind: "Event"}, "audit", DeclaredOnly, DeclaredOnly, "", "3h"},
		{configMap, "audit", DeclaredOnly, NotDeclared, `"broken"`, ""},
		{configMap, "other", DeclaredOnly, NotDeclared, `"broken"`, ""},
	} {
		if got := Declares(b, tc.gk, tc.name); got != tc.declares {
			t.Errorf("Declares(%v, %s) = %v, want %v", tc.gk, tc.name, got, tc.declares)
		}
		got, err := DeclaresReadably(b, tc.gk, tc.name)
		if got != tc.readably || (err == nil) != (tc.unreadable == "") || (err != nil && !strings.Contains(err.Error(), tc.unreadable)) {
			t.Errorf("DeclaresReadably(%v, %s) = %v, %v; want %v, an error naming %s", tc.gk, tc.name, got, err, tc.readably, tc.unreadable)
		}
		obj := &metav1.ObjectMeta{Name: tc.name}
		if got := DeclaredDelay(b, tc.gk, obj); got != tc.delay {
			t.Errorf("DeclaredDelay(%v, %s) = %q, want %q", tc.gk, tc.name, got, tc.delay)
		}
	}
}
