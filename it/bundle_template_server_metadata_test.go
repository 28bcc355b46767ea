package it

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A template copied from `kubectl get -o yaml` keeps the metadata the API
// server set. limbo drops it: before, the resourceVersion went out with every
// apply after the first as a precondition, which failed (Conflict) at every
// pass, ten times a second, and a change of the template never reached the
// object.
func TestTemplateServerSetMetadataIsDropped(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	copied := func(mode string) map[string]any {
		cm := configMap("settings", map[string]any{"mode": mode}, nil)
		md := cm["metadata"].(map[string]any)
		md["resourceVersion"] = "1234"
		md["uid"] = "0f6e7a4c-0000-4000-8000-000000000000"
		md["creationTimestamp"] = "2026-11-24T10:00:00Z"
		md["generation"] = 1
		return cm
	}
	b := createBundle(t, ns, "copied", objectResource(t, "settings", copied("safe")))
	waitReady(t, b)
	updateBundle(t, b, objectResource(t, "settings", copied("fast")))
	waitReady(t, b)
	waitObject(t, configMapGVK, ns, "settings", func(u *unstructured.Unstructured) error {
		if mode, _, _ := unstructured.NestedString(u.Object, "data", "mode"); mode != "fast" {
			return fmt.Errorf("data.mode = %q, want fast", mode)
		}
		return nil
	})
}
