package it

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle with every kind of field survives the API server unchanged: the CRD
// schema neither prunes the embedded objects nor the plugin spec.
func TestBundleRoundTrip(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	in := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "db-config", Object: rawObject(t, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "db-config", "annotations": map[string]any{limbov1alpha1.AnnotationDeletionDelay: "24h"}},
				"data":     map[string]any{"host": "db.internal", "nested": "x"},
			})},
			{Name: "app", References: []limbov1alpha1.Reference{{
				Name: "dbhost", Resource: "db-config", Path: "data.host", Example: &apiextensionsv1.JSON{Raw: []byte(`"db.example"`)},
			}}, Object: rawObject(t, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app"},
				"data": map[string]any{"DB_HOST": "!{dbhost}"}, "unknownTopLevel": map[string]any{"kept": true},
			})},
			{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: "namespace-gc", DeletionDelay: "10m",
				Spec: &apiextensionsv1.JSON{Raw: []byte(`{"gcInterval":"1h","exclude":["default"],"storageos":{"endpoint":"http://x:5705"}}`)}}},
		}},
	}
	if err := env.Client.Create(ctx, in.DeepCopy()); err != nil {
		t.Fatalf("create: %v", err)
	}
	var out limbov1alpha1.Bundle
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &out); err != nil {
		t.Fatalf("get: %v", err)
	}
	for i := range in.Spec.Resources {
		want, got := in.Spec.Resources[i], out.Spec.Resources[i]
		if !jsonEqual(t, want, got) {
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(got)
			t.Errorf("resource %d changed on the way through the API server:\nwant %s\ngot  %s", i, wantJSON, gotJSON)
		}
	}
	var list limbov1alpha1.BundleList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
}

func rawObject(t testing.TB, obj map[string]any) *runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: data}
}

func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	var av, bv any
	for _, p := range []struct {
		in  any
		out *any
	}{{a, &av}, {b, &bv}} {
		data, err := json.Marshal(p.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, p.out); err != nil {
			t.Fatal(err)
		}
	}
	return equality.Semantic.DeepEqual(av, bv)
}
