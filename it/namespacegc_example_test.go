package it

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// examples/namespace-gc (secret.yaml, bundle.yaml) is valid and goes Ready
// against a StorageOS simulator, as under `make run`; only the endpoint is
// changed, from the simulator's fixed port to this test's.
func TestNamespaceGCExample(t *testing.T) {
	dir := filepath.Join(env.RepoRoot, "examples", "namespace-gc")
	read := func(name string, into any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var secret corev1.Secret
	var b limbov1alpha1.Bundle
	read("secret.yaml", &secret)
	read("bundle.yaml", &b)

	ns := env.Namespace(t)
	_, url := startStorageOS(t)
	if len(b.Spec.Resources) != 1 || b.Spec.Resources[0].Plugin == nil || b.Spec.Resources[0].Plugin.Spec == nil {
		t.Fatalf("bundle.yaml: want one plugin resource, got %+v", b.Spec.Resources)
	}
	res := &b.Spec.Resources[0]
	var spec map[string]any
	if err := json.Unmarshal(res.Plugin.Spec.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	storageos := spec["storageos"].(map[string]any)
	if storageos["endpoint"] != "http://127.0.0.1:5705" {
		t.Errorf("bundle.yaml endpoint = %v, want the simulator of limbo dev --simulators, http://127.0.0.1:5705", storageos["endpoint"])
	}
	storageos["endpoint"] = url
	raw, _ := json.Marshal(spec)
	res.Plugin.Spec.Raw = raw

	secret.Namespace, b.Namespace = ns, ns
	if err := env.Client.Create(context.Background(), &secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, &b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, res.Name, limbov1alpha1.ResourceReady, "", "1 StorageOS namespaces, 0 orphaned"); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
}
