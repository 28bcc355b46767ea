package it

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// examples/namespace-gc (secret.yaml, bundle.yaml) is valid and goes Ready
// against a StorageOS simulator, as under `make run`; only the endpoint is
// changed, from the simulator's fixed port to this test's.
func TestNamespaceGCExample(t *testing.T) {
	t.Parallel()
	e := readPluginExample(t, "namespace-gc")
	ns := env.Namespace(t)
	_, url := startStorageOS(t)
	storageos := e.Spec["storageos"].(map[string]any)
	if storageos["endpoint"] != "http://127.0.0.1:5705" {
		t.Errorf("bundle.yaml endpoint = %v, want the simulator of limbo dev --simulators, http://127.0.0.1:5705", storageos["endpoint"])
	}
	storageos["endpoint"] = url
	b := e.create(t, ns)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, e.Resource().Name, limbov1alpha1.ResourceReady, "", "1 StorageOS namespaces, 0 orphaned"); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
}
