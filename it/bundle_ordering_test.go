package it

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Resources are created in dependency order, references carry values from the
// live dependency into the dependent, and every object is labelled and owned.
func TestOrderingAndReferences(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "chain",
		// Declared dependents first: the order comes from references, not the list.
		objectResource(t, "app", configMap("app", map[string]any{"url": "http://!{host}:!{port}/", "port": "!{port}"}, nil),
			limbov1alpha1.Reference{Name: "host", Resource: "db", Path: "data.host"},
			limbov1alpha1.Reference{Name: "port", Resource: "db", Path: "data.port"}),
		objectResource(t, "db", configMap("db", map[string]any{"host": "!{h}", "port": "5432"}, nil),
			limbov1alpha1.Reference{Name: "h", Resource: "base", Path: "data.host"}),
		objectResource(t, "base", configMap("base", map[string]any{"host": "db.internal"}, nil)),
	)
	ready := waitReady(t, b)
	var order []string
	for _, r := range ready.Status.Resources {
		order = append(order, r.Name)
		if r.State != limbov1alpha1.ResourceReady || r.Object == nil || r.Object.UID == "" {
			t.Errorf("resource %+v: want Ready with its object's UID", r)
		}
	}
	if fmt.Sprint(order) != "[base db app]" {
		t.Errorf("status.resources order = %v, want dependencies first: [base db app]", order)
	}
	if ready.Status.ResourcesReady != "3/3" {
		t.Errorf("resourcesReady = %q, want 3/3", ready.Status.ResourcesReady)
	}
	app := getObject(t, configMapGVK, ns, "app")
	if got, _, _ := unstructured.NestedString(app.Object, "data", "url"); got != "http://db.internal:5432/" {
		t.Errorf("app data.url = %q, want the interpolated http://db.internal:5432/", got)
	}
	if got, _, _ := unstructured.NestedString(app.Object, "data", "port"); got != "5432" {
		t.Errorf("app data.port = %q, want 5432", got)
	}
	if app.GetLabels()[limbov1alpha1.LabelBundle] != "chain" {
		t.Errorf("labels = %v, want %s=chain", app.GetLabels(), limbov1alpha1.LabelBundle)
	}
	refs := app.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != ready.UID || refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("owner references = %+v, want one controller reference to the Bundle with blockOwnerDeletion", refs)
	}
}
