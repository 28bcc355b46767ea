package bundlespec

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Adopter finds the Bundle that declares an object to adopt it among a
// namespace's Bundles, and decodes no template that does not mention
// limbo.dev/adopt: the reaper asks it at every due released object, a sharded
// pass at every orphan, and a namespace of 2,000 Bundles of 25 templates took
// 1.7 s a lookup, decoding each.
func TestAdopter(t *testing.T) {
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	bundle := func(name string, templates ...map[string]any) limbov1alpha1.Bundle {
		b := limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		for i, tmpl := range templates {
			b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: fmt.Sprintf("r%d", i), Object: obj(t, tmpl)})
		}
		return b
	}
	adopt := map[string]any{"annotations": map[string]any{limbov1alpha1.AnnotationAdopt: "true"}}
	var bundles []limbov1alpha1.Bundle
	for i := range 200 {
		var templates []map[string]any
		for j := range 25 {
			templates = append(templates, cm(fmt.Sprintf("b%d-cm%d", i, j), nil))
		}
		bundles = append(bundles, bundle(fmt.Sprintf("b%d", i), templates...))
	}
	deleted := bundle("deleted", cm("pvc-data", adopt))
	now := metav1.Now()
	deleted.DeletionTimestamp = &now
	bundles = append(bundles, bundle("declares", cm("pvc-data", nil)), deleted, bundle("next", cm("pvc-data", adopt)), bundle("after", cm("pvc-data", adopt)))

	for _, tc := range []struct {
		name, except, want string
	}{
		{"pvc-data", "", "next"},      // not "declares" (no adopt), not "deleted" (being deleted)
		{"pvc-data", "next", "after"}, // the Bundle asking is not its own adopter
		{"b3-cm4", "", ""},            // declared, not to adopt
		{"nobody", "", ""},
	} {
		got := ""
		if b := Adopter(bundles, configMap, tc.name, tc.except); b != nil {
			got = b.Name
		}
		if got != tc.want {
			t.Errorf("Adopter(%s, except %q) = %q, want %q", tc.name, tc.except, got, tc.want)
		}
	}
	if allocs := testing.AllocsPerRun(5, func() { Adopter(bundles, configMap, "nobody", "") }); allocs > 100 {
		t.Errorf("Adopter over %d Bundles that adopt nothing: %.0f allocations a lookup, want at most 100 (their templates decoded)", len(bundles)-3, allocs)
	}
}
