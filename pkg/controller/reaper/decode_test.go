package reaper

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// releasedOfOneBundle is Bundle shop, with templates ConfigMap templates
// ("cm-0000" on) and a plugin resource, its pass of its current spec to come,
// and the objects released ConfigMaps ("cm-0000" on) that its label names: the
// first templates of them it declares (HeldDeclared), the others its plugin
// resource may make again (HeldMayGenerate). Each object's decision asks
// whether shop declares it.
func releasedOfOneBundle(tb testing.TB, objects, templates int) []client.Object {
	tb.Helper()
	shop := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "b-shop", Generation: 2},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1}}
	shop.Spec.Resources = append(configMapTemplates(templates, `"limbo.dev/deletionDelay":"1h"`),
		limbov1alpha1.Resource{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "configmap"}})
	return append([]client.Object{shop}, dueReleased(objects)...)
}

// configMapTemplates is n templates of ConfigMaps "cm-0000" on, with
// annotations (JSON members).
func configMapTemplates(n int, annotations string) []limbov1alpha1.Resource {
	var out []limbov1alpha1.Resource
	for i := range n {
		name := fmt.Sprintf("cm-%04d", i)
		out = append(out, limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","annotations":{` + annotations + `}}}`)}})
	}
	return out
}

// dueReleased is n released ConfigMaps "cm-0000" on of Bundle shop, due.
func dueReleased(n int) []client.Object {
	var out []client.Object
	for i := range n {
		out = append(out, inLimbo(fmt.Sprintf("cm-%04d", i), "2026-11-22T08:00:00Z", "1h", false))
	}
	return out
}

// releasedForAnAdopter is released ConfigMaps ("cm-0000" on) whose Bundle
// (shop) is gone, due, and Bundle taker, with templates ConfigMap templates
// that adopt them (limbo.dev/adopt): each object's decision looks for an
// adopter among the namespace's Bundles (HeldForAdopter).
func releasedForAnAdopter(tb testing.TB, objects, templates int) []client.Object {
	tb.Helper()
	taker := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "taker", Namespace: "ns", UID: "b-taker", Generation: 1},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1}}
	taker.Spec.Resources = configMapTemplates(templates, `"limbo.dev/adopt":"true"`)
	return append([]client.Object{taker}, dueReleased(objects)...)
}

// A wake decodes the templates of the Bundle its released objects name, and of
// the Bundles that may adopt them, once, not once per object: a Bundle that
// released 1,000 objects and has 200 templates cost 200,000 template decodes a
// wake. An object more in the pass costs fewer allocations than the Bundle has
// templates (decoding them costs several each), and the decisions are those of
// each object alone.
func TestPassDecodesABundleOnce(t *testing.T) {
	const templates, objects = 200, 50
	for _, tc := range []struct {
		name    string
		objects func(testing.TB, int, int) []client.Object
		holder  string
		wait    time.Duration
	}{
		{"the Bundle an object names", releasedOfOneBundle, "shop", holdRecheck},
		{"a Bundle that adopts them", releasedForAnAdopter, "taker", declaredRecheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passAllocs := func(objects int) float64 {
				r, c := newReaper(t, tc.objects(t, objects, templates)...)
				allocs := testing.AllocsPerRun(2, func() {
					wait, err := r.pass(context.Background(), true)
					if err != nil || wait != tc.wait {
						t.Errorf("pass of %d objects: wait, err = %v, %v; want %v, nil", objects, wait, err, tc.wait)
					}
				})
				var left corev1.ConfigMapList
				if err := c.List(context.Background(), &left); err != nil || len(left.Items) != objects {
					t.Errorf("after the passes: %d objects, %v; want the %d held ones kept", len(left.Items), err, objects)
				}
				if !r.holders[client.ObjectKey{Namespace: "ns", Name: tc.holder}] {
					t.Errorf("holders = %v, want %s", r.holders, tc.holder)
				}
				return allocs
			}
			perObject := (passAllocs(2*objects) - passAllocs(objects)) / objects
			if perObject >= templates {
				t.Errorf("an object more in a pass costs %.0f allocations, want fewer than the Bundle's %d templates: they are decoded for each object", perObject, templates)
			}
		})
	}
}

// BenchmarkPassOverReleasedObjectsOfOneBundle is a wake of the reaper over
// 1,000 released objects of one Bundle of 200 templates, each held by it.
func BenchmarkPassOverReleasedObjectsOfOneBundle(b *testing.B) {
	r, _ := newReaper(b, releasedOfOneBundle(b, 1000, 200)...)
	for b.Loop() {
		if wait, err := r.pass(context.Background(), true); err != nil || wait != holdRecheck {
			b.Fatalf("wait, err = %v, %v; want holdRecheck, nil", wait, err)
		}
	}
}
