package bundlespec

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// FuzzParse: any Bundle spec the API server could store parses to a plan or
// to errors that name a resource of the Bundle, the same on every call; never
// a panic. A plan orders every resource once, dependencies first, and its
// templates live in the Bundle's namespace.
func FuzzParse(f *testing.F) {
	for _, spec := range []string{
		`{}`,
		`{"resources":[]}`,
		`{"resources":[{"name":"db","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","annotations":{"limbo.dev/deletionDelay":"24h"}},"data":{"host":"db.internal"}}},
		  {"name":"app","references":[{"name":"dbhost","resource":"db","path":"data.host","example":"db.example"}],
		   "object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"},"data":{"DB_HOST":"!{dbhost}","URL":"http://!{dbhost}:5432"}}}]}`,
		`{"resources":[{"name":"a","references":[{"resource":"b"}],"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}},
		  {"name":"b","references":[{"resource":"a"}],"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}}]}`,
		`{"resources":[{"name":"a","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}},{"name":"b","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}}]}`,
		`{"resources":[{"name":"a","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"!{n}-data","namespace":"other"}}}]}`,
		`{"resources":[{"name":"a","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}},{"name":"a","plugin":{"name":"gc"}}]}`,
		`{"resources":[{"name":"Bad_Name","object":{"kind":"ConfigMap"}},{"name":"p","plugin":{"name":"gc","deletionDelay":"-1s","spec":{"bad":true}}}]}`,
		`{"resources":[{"name":"p","plugin":{"name":"nope","spec":"!{x}"}},{"name":"q"},{"name":"r","references":[{"resource":"missing"}],"plugin":{"name":"gc"}}]}`,
		`{"resources":[{"name":"t","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t","annotations":{"limbo.dev/deletionTimestamp":"2026-01-01T00:00:00Z","limbo.dev/deletionDelay":"x"},"labels":{"limbo.dev/pending-deletion":"true"}}}}]}`,
		`{"resources":[{"name":"b","object":{"apiVersion":"limbo.dev/v1alpha1","kind":"Bundle","metadata":{"name":"inner"}}},{"name":"s","object":[1,2]}]}`,
		`{"allowEmpty":true,"resources":[{"name":"self","references":[{"resource":"self"}],"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"}}}]}`,
	} {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, specJSON string) {
		var spec limbov1alpha1.BundleSpec
		if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
			return
		}
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}, Spec: spec}
		plan, errs := Parse(b, mapper(), catalog{})
		plan2, errs2 := Parse(b.DeepCopy(), mapper(), catalog{})
		if !reflect.DeepEqual(errs, errs2) || (plan == nil) != (plan2 == nil) || (plan != nil && !slices.Equal(plan.Order, plan2.Order)) {
			t.Fatalf("Parse is not deterministic: %v / %v; %v / %v", errs, errs2, plan, plan2)
		}
		if len(errs) > 0 {
			if plan != nil {
				t.Fatalf("Parse returned a plan and errors %v", errs)
			}
			names := map[string]bool{}
			for _, r := range spec.Resources {
				names[r.Name] = true
			}
			for _, e := range errs {
				if !names[e.Resource] && e.Reason != limbov1alpha1.ReasonMissingReference {
					t.Errorf("error %q (%s) names no resource of the Bundle", e.Message, e.Reason)
				}
				if e.Reason == "" || e.Message == "" {
					t.Errorf("error without a reason or a message: %#v", e)
				}
			}
			return
		}
		if plan == nil {
			t.Fatal("Parse returned neither a plan nor errors")
		}
		if len(plan.Order) != len(spec.Resources) {
			t.Fatalf("plan orders %v, the spec has %d resources", plan.Order, len(spec.Resources))
		}
		position := map[string]int{}
		for i, name := range plan.Order {
			if _, dup := position[name]; dup {
				t.Fatalf("plan orders %q twice: %v", name, plan.Order)
			}
			position[name] = i
		}
		for _, r := range spec.Resources {
			for _, ref := range r.References {
				if position[ref.Resource] > position[r.Name] {
					t.Errorf("%q comes before its dependency %q in %v", r.Name, ref.Resource, plan.Order)
				}
			}
			if res := plan.Resources[r.Name]; res.Template != nil && res.Template.GetNamespace() != b.Namespace {
				t.Errorf("template of %q is in namespace %q, not the Bundle's", r.Name, res.Template.GetNamespace())
			}
		}
	})
}
