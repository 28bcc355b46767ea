package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// A value read from a Secret may only be injected into a Secret: into a Secret
// it goes as it is (still base64, into data); a Bundle that injects one into
// anything else is a spec error (InvalidReference), Stalled at once rather
// than when the Secret exists, and nothing of it is written.
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
	)
	waitReady(t, b)
	if got := stringField(getObject(t, secretGVK, ns, "into-secret"), "data", "DB_PASSWORD"); got != "c2VjcmV0" {
		t.Errorf("into-secret data.DB_PASSWORD = %q, want the source's base64 value c2VjcmV0", got)
	}

	leak := createBundle(t, ns, "leak",
		objectResource(t, "source", secret("leak-source", map[string]any{"password": "c2VjcmV0"})),
		objectResource(t, "into-configmap", configMap("into-configmap", map[string]any{"password": "!{pw}"}, nil), ref),
	)
	msg := `reference "pw" reads Secret "leak-source": a value read from a Secret may only be injected into a Secret`
	waitBundle(t, leak, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "into-configmap", limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidReference, msg); err != nil {
			return err
		}
		return conditionIs(cur, limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonInvalidSpec)
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := noObject(configMapGVK, ns, "into-configmap")(); err != nil {
			return fmt.Errorf("a Secret's value leaked into a ConfigMap: %w", err)
		}
		return nil
	})
}
