package bundlespec

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The reaper's decision on a released ConfigMap "data" (due: no delay): held
// by the Bundle its label names while that Bundle declares it or may make it
// again, by another Bundle of its namespace that adopts it, and by no Bundle
// being deleted. Asked with no memo, and twice with one (the second answer
// from the Declarations the first built): the same decision.
func TestReleasedHold(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cmGK := schema.GroupKind{Kind: "ConfigMap"}
	template := func(annotations string) limbov1alpha1.Resource {
		return limbov1alpha1.Resource{Name: "data", Object: &runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"data","annotations":{` + annotations + `}}}`)}}
	}
	gen := limbov1alpha1.Resource{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "configmap"}}
	// bundle is a Bundle of generation 2, its pass of it done or not, being
	// deleted or not, with resources, the plugin resource gen Ready or not.
	bundle := func(name string, passed, deleting, genReady bool, resources ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", UID: types.UID("uid-" + name), ResourceVersion: "1", Generation: 2},
			Spec: limbov1alpha1.BundleSpec{Resources: resources}}
		if passed {
			b.Status.ObservedGeneration = 2
		}
		if deleting {
			b.DeletionTimestamp = &metav1.Time{Time: now}
		}
		if genReady {
			b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "gen", State: limbov1alpha1.ResourceReady}}
		}
		return b
	}
	for _, tc := range []struct {
		name        string
		generatedBy string
		named       *limbov1alpha1.Bundle
		others      []limbov1alpha1.Bundle
		want        HoldReason
		wantBy      string
	}{
		{"no Bundle", "", nil, nil, NotHeld, ""},
		{"declared, its pass to come", "", bundle("a", false, false, false, template("")), nil, HeldDeclared, "a"},
		{"declared, its pass done without adopting it", "", bundle("a", true, false, false, template("")), nil, HeldDeclaredNotAdopted, "a"},
		{"declared by a Bundle being deleted", "", bundle("a", false, true, false, template("")), nil, NotHeld, ""},
		{"neither declared nor a plugin resource, the pass to come", "", bundle("a", false, false, false), nil, NotHeld, ""},
		{"a plugin resource, the pass to come", "", bundle("a", false, false, false, gen), nil, HeldMayGenerate, "a"},
		{"a plugin resource, the pass done", "", bundle("a", true, false, true, gen), nil, NotHeld, ""},
		{"made by a generator not Ready", "gen", bundle("a", true, false, false, gen), nil, HeldGeneratorNotReady, "a"},
		{"made by a generator Ready", "gen", bundle("a", true, false, true, gen), nil, NotHeld, ""},
		{"made by a resource no longer in the spec", "old-gen", bundle("a", true, false, false, gen), nil, NotHeld, ""},
		{"adopted by another Bundle", "", bundle("a", true, false, true),
			[]limbov1alpha1.Bundle{*bundle("b", true, false, false, template(`"limbo.dev/adopt":"true"`))}, HeldForAdopter, "b"},
		{"declared by another Bundle, not to adopt", "", bundle("a", true, false, true),
			[]limbov1alpha1.Bundle{*bundle("b", true, false, false, template(""))}, NotHeld, ""},
		{"adopted by another Bundle being deleted", "", bundle("a", true, false, true),
			[]limbov1alpha1.Bundle{*bundle("b", true, true, false, template(`"limbo.dev/adopt":"true"`))}, NotHeld, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Name: "data", Namespace: "team"}
			if tc.generatedBy != "" {
				obj.Annotations = map[string]string{limbov1alpha1.AnnotationGeneratedBy: tc.generatedBy}
			}
			bundles := tc.others
			if tc.named != nil {
				bundles = append(bundles, *tc.named)
			}
			memo := &DeclarationsMemo{}
			for _, ask := range []struct {
				name string
				memo *DeclarationsMemo
			}{{"no memo", nil}, {"a memo", memo}, {"the memo again", memo}} {
				got, by, err := ReleasedHold(obj, cmGK, tc.named, ask.memo, func() ([]limbov1alpha1.Bundle, error) { return bundles, nil }, now)
				if got != tc.want || by != tc.wantBy || err != nil {
					t.Errorf("%s: ReleasedHold = %v, %q, %v; want %v, %q", ask.name, got, by, err, tc.want, tc.wantBy)
				}
			}
		})
	}
}

// A teardown takes out of limbo, to release it anew, an object its spec
// declares again or its generator may make again — but not one this
// teardown's own release half wrote (its marks landed, the owner reference not
// yet gone, its released time no earlier than the deletion): cancelled, it was
// released and cancelled again pass after pass.
func TestDeclaredInLimbo(t *testing.T) {
	cmGK := schema.GroupKind{Kind: "ConfigMap"}
	deleted := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team", Generation: 2, DeletionTimestamp: &metav1.Time{Time: deleted}},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "data", Object: &runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"data"}}`)}}}},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"declared, not stamped", nil, false},
		{"declared and stamped", map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2026-03-01T12:00:00Z"}, true},
		{"declared, stamped by a release that half landed", map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2026-03-01T12:00:00Z",
			limbov1alpha1.AnnotationReleased: "2026-03-01T12:00:01Z"}, false},
		// Released to this Bundle as adopter hours before its deletion, the
		// adoption's cancel lost: its stamp is long due, not the teardown's.
		{"declared, released to it before its deletion", map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2026-03-01T09:00:00Z",
			limbov1alpha1.AnnotationReleased: "2026-03-01T09:00:00Z"}, true},
		{"declared, released at a time that does not parse", map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2026-03-01T12:00:00Z",
			limbov1alpha1.AnnotationReleased: "soon"}, true},
	} {
		obj := &metav1.ObjectMeta{Name: "data", Namespace: "team", Annotations: tc.annotations}
		if got := DeclaredInLimbo(b, cmGK, obj); got != tc.want {
			t.Errorf("%s: DeclaredInLimbo = %v, want %v", tc.name, got, tc.want)
		}
	}
}
