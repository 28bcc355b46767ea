package it

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// A value read from a Secret may only be injected into a Secret: into a Secret
// it goes as it is (still base64, into data); into anything else the resource is
// in Error and its object is not written.
func TestSecretValueOnlyIntoSecret(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	secret := func(name string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "data": data}
	}
	ref := limbov1alpha1.Reference{Name: "pw", Resource: "source", Path: "data.password"}
	b := createBundle(t, ns, "secrets",
		objectResource(t, "source", secret("source", map[string]any{"password": "c2VjcmV0"})), // "secret"
		objectResource(t, "into-secret", secret("into-secret", map[string]any{"DB_PASSWORD": "!{pw}"}), ref),
		objectResource(t, "into-configmap", configMap("into-configmap", map[string]any{"password": "!{pw}"}, nil), ref),
	)
	msg := `data.password: reference "pw" is read from a Secret and may only be injected into a Secret`
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "into-secret", limbov1alpha1.ResourceReady, ""); err != nil {
			return err
		}
		return resourceMessageIs(cur, "into-configmap", limbov1alpha1.ResourceError, "ReferenceError", msg)
	})
	if got := stringField(getObject(t, secretGVK, ns, "into-secret"), "data", "DB_PASSWORD"); got != "c2VjcmV0" {
		t.Errorf("into-secret data.DB_PASSWORD = %q, want the source's base64 value c2VjcmV0", got)
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := noObject(configMapGVK, ns, "into-configmap")(); err != nil {
			return fmt.Errorf("a Secret's value leaked into a ConfigMap: %w", err)
		}
		return nil
	})
}
