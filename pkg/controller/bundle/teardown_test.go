package bundle

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// teardownWaves: first the objects no resource declares, then the resources'
// objects in reverse dependency order (dependents before what they depend on);
// without a plan, everything in one wave.
func TestTeardownWaves(t *testing.T) {
	cm := func(name string) *unstructured.Unstructured { return testObject(configMapGVK, name) }
	for _, tc := range []struct {
		name    string
		plan    []spec // nil: no plan (an invalid spec)
		objects []*unstructured.Unstructured
		want    [][]string
	}{
		{name: "no plan: one wave",
			objects: []*unstructured.Unstructured{cm("a"), cm("b")},
			want:    [][]string{{"ConfigMap a", "ConfigMap b"}}},
		{name: "a chain, dependents first",
			plan:    []spec{{name: "db", gvk: configMapGVK}, {name: "app", gvk: configMapGVK, refs: []string{"db"}}, {name: "web", gvk: configMapGVK, refs: []string{"app"}}},
			objects: []*unstructured.Unstructured{cm("app"), cm("db"), cm("web")},
			want:    [][]string{nil, {"ConfigMap web"}, {"ConfigMap app"}, {"ConfigMap db"}}},
		{name: "undeclared objects go first, in the order given",
			plan:    []spec{{name: "db", gvk: configMapGVK}},
			objects: []*unstructured.Unstructured{cm("stray-b"), cm("db"), cm("stray-a")},
			want:    [][]string{{"ConfigMap stray-b", "ConfigMap stray-a"}, {"ConfigMap db"}}},
		{name: "independent resources share a wave",
			plan:    []spec{{name: "a", gvk: configMapGVK}, {name: "b", gvk: secretGVK}},
			objects: []*unstructured.Unstructured{cm("a"), testObject(secretGVK, "b")},
			want:    [][]string{nil, {"ConfigMap a", "Secret b"}}},
		{name: "an object already gone leaves its wave empty",
			plan:    []spec{{name: "db", gvk: configMapGVK}, {name: "app", gvk: configMapGVK, refs: []string{"db"}}},
			objects: []*unstructured.Unstructured{cm("db")},
			want:    [][]string{nil, nil, {"ConfigMap db"}}},
		{name: "a plugin resource has no object",
			plan:    []spec{{name: "db", gvk: configMapGVK}, {name: "gc", refs: []string{"db"}}},
			objects: []*unstructured.Unstructured{cm("db")},
			want:    [][]string{nil, nil, {"ConfigMap db"}}},
		{name: "a generated object goes in its plugin resource's wave, after its dependents",
			plan:    []spec{{name: "cfg"}, {name: "app", gvk: configMapGVK, refs: []string{"cfg"}}},
			objects: []*unstructured.Unstructured{cm("app"), generated(cm("cfg-data"), "cfg"), generated(cm("stray"), "gone"), cm("old")},
			want:    [][]string{{"ConfigMap stray", "ConfigMap old"}, {"ConfigMap app"}, {"ConfigMap cfg-data"}}},
		{name: "an object of another kind with a declared name is undeclared",
			plan:    []spec{{name: "db", gvk: configMapGVK}},
			objects: []*unstructured.Unstructured{testObject(secretGVK, "db"), cm("db")},
			want:    [][]string{{"Secret db"}, {"ConfigMap db"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			var plan *bundlespec.Plan
			if tc.plan != nil {
				plan = testPlan(t, tc.plan...)
			}
			for _, wave := range teardownWaves(plan, tc.objects) {
				var names []string
				if len(wave) > 0 {
					names = describeObjects(wave)
				}
				got = append(got, names)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("waves = %q, want %q", got, tc.want)
			}
		})
	}
}

// A teardown counts as DeletionFailure only what needs someone's attention.
func TestIsTeardownFailure(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"gone already", fmt.Errorf("update ConfigMap ns/db: %w", apierrors.NewNotFound(gr, "db")), false},
		{"changed since the cache's copy", fmt.Errorf("update ConfigMap ns/db: %w", apierrors.NewConflict(gr, "db", errors.New("the object has been modified"))), false},
		{"refused", fmt.Errorf("update ConfigMap ns/db: %w", apierrors.NewForbidden(gr, "db", errors.New("denied by policy"))), true},
		{"unreachable", errors.New("connection refused"), true},
	} {
		if got := isTeardownFailure(tc.err); got != tc.want {
			t.Errorf("%s: isTeardownFailure(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// generated is o as made by the generator plugin resource named resource.
func generated(o *unstructured.Unstructured, resource string) *unstructured.Unstructured {
	o.SetAnnotations(map[string]string{limbov1alpha1.AnnotationGeneratedBy: resource})
	return o
}
