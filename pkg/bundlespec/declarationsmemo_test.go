package bundlespec

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// configMaps is a Bundle of namespace team, with its UID and resourceVersion,
// whose templates declare the ConfigMaps names.
func configMaps(uid types.UID, resourceVersion string, names ...string) *limbov1alpha1.Bundle {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team", UID: uid, ResourceVersion: resourceVersion, Generation: 1}}
	for _, name := range names {
		b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","annotations":{"limbo.dev/deletionDelay":"1h"}}}`)}})
	}
	return b
}

// A memo gives the Declarations it built for a Bundle of the same UID and
// resourceVersion (the same content: read again unchanged), and decodes anew a
// Bundle changed since, another Bundle, one with no identity (built by hand:
// nothing tells it unchanged), and, nil, every Bundle.
func TestDeclarationsMemo(t *testing.T) {
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	for _, tc := range []struct {
		name          string
		memo          *DeclarationsMemo
		first, second *limbov1alpha1.Bundle
		reused        bool
	}{
		{"read again unchanged", &DeclarationsMemo{}, configMaps("u1", "7", "a"), configMaps("u1", "7", "a"), true},
		{"changed since", &DeclarationsMemo{}, configMaps("u1", "7", "a"), configMaps("u1", "8", "b"), false},
		{"deleted and created again", &DeclarationsMemo{}, configMaps("u1", "7", "a"), configMaps("u2", "9", "b"), false},
		{"another Bundle at the same resourceVersion", &DeclarationsMemo{}, configMaps("u1", "7", "a"), configMaps("u2", "7", "b"), false},
		{"no UID", &DeclarationsMemo{}, configMaps("", "7", "a"), configMaps("", "7", "b"), false},
		{"no resourceVersion", &DeclarationsMemo{}, configMaps("u1", "", "a"), configMaps("u1", "", "b"), false},
		{"no memo", nil, configMaps("u1", "7", "a"), configMaps("u1", "7", "a"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := tc.memo.Of(tc.first)
			second := tc.memo.Of(tc.second)
			if reused := first == second; reused != tc.reused {
				t.Errorf("the second Bundle's Declarations are the first's: %t, want %t", reused, tc.reused)
			}
			for _, name := range []string{"a", "b"} {
				want := Declares(tc.second, configMap, name)
				if got := second.Declares(configMap, name); got != want {
					t.Errorf("the second Bundle declares %s: %v, want %v (its own templates)", name, got, want)
				}
			}
		})
	}
}

// heldDeclared are a Bundle of templates ConfigMap templates ("cm-0000" on),
// passed, and objects released ConfigMaps of the same names that its label
// names, due: each held by it (HeldDeclaredNotAdopted) — once its templates are
// decoded.
func heldDeclared(objects, templates int) (*limbov1alpha1.Bundle, []metav1.Object) {
	names := make([]string, templates)
	for i := range names {
		names[i] = fmt.Sprintf("cm-%04d", i)
	}
	b := configMaps("u1", "7", names...)
	b.Status.ObservedGeneration = 1
	released := make([]metav1.Object, objects)
	for i := range released {
		released[i] = &metav1.ObjectMeta{Name: names[i%templates], Namespace: "team"}
	}
	return b, released
}

// A memo decodes a Bundle once for every released object it names: a Bundle
// that released 1,000 objects and has 200 templates cost 200,000 template
// decodes a reaper wake. The hold of an object after the first costs fewer
// allocations than its Bundle has templates (decoding them costs several
// each).
func TestReleasedHoldWithAMemoDecodesOnce(t *testing.T) {
	const templates = 200
	b, released := heldDeclared(2, templates)
	memo := &DeclarationsMemo{}
	noBundles := func() ([]limbov1alpha1.Bundle, error) { return nil, nil }
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, obj := range released {
		if got, by, err := ReleasedHold(obj, schema.GroupKind{Kind: "ConfigMap"}, b, memo, noBundles, now); got != HeldDeclaredNotAdopted || by != "shop" || err != nil {
			t.Errorf("%s: ReleasedHold = %v, %q, %v; want HeldDeclaredNotAdopted by shop", obj.GetName(), got, by, err)
		}
	}
	perObject := testing.AllocsPerRun(20, func() {
		_, _, _ = ReleasedHold(released[1], schema.GroupKind{Kind: "ConfigMap"}, b, memo, noBundles, now)
	})
	if perObject >= templates {
		t.Errorf("the hold of an object costs %.0f allocations, want fewer than its Bundle's %d templates: they are decoded for each object", perObject, templates)
	}
}

// BenchmarkReleasedHold decides 1,000 released objects of one Bundle of 200
// templates, as a reaper wake does: with no memo, each decodes the templates.
func BenchmarkReleasedHold(b *testing.B) {
	bundle, released := heldDeclared(1000, 200)
	noBundles := func() ([]limbov1alpha1.Bundle, error) { return nil, nil }
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name string
		memo func() *DeclarationsMemo
	}{
		{"decoded for each object", func() *DeclarationsMemo { return nil }},
		{"a memo a wake", func() *DeclarationsMemo { return &DeclarationsMemo{} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				memo := bc.memo()
				for _, obj := range released {
					if got, _, _ := ReleasedHold(obj, schema.GroupKind{Kind: "ConfigMap"}, bundle, memo, noBundles, now); got != HeldDeclaredNotAdopted {
						b.Fatalf("%s: %v, want HeldDeclaredNotAdopted", obj.GetName(), got)
					}
				}
			}
		})
	}
}
