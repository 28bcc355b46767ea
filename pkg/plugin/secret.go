package plugin

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secret is a credentials Secret a plugin spec names (`credentialsSecretRef`).
type Secret struct {
	Name string
	Data map[string][]byte
}

// ReadSecret reads the Secret called name in the Bundle's namespace, from the
// API server (Secrets are not cached), with req.SecretsReader. Errors name the
// Secret.
func ReadSecret(ctx context.Context, req Request, name string) (Secret, error) {
	var s corev1.Secret
	if err := req.SecretsReader().Get(ctx, client.ObjectKey{Namespace: req.Bundle.Namespace, Name: name}, &s); err != nil {
		return Secret{}, fmt.Errorf("credentials Secret %q: %w", name, err)
	}
	return Secret{Name: name, Data: s.Data}, nil
}

// Has reports whether key is set to a non-empty value.
func (s Secret) Has(key string) bool { return len(s.Data[key]) > 0 }

// Values returns the values of keys, in order, or an error naming the Secret
// and every key it needs when one is missing or empty.
func (s Secret) Values(keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		if !s.Has(k) {
			return nil, fmt.Errorf("credentials Secret %q needs the keys %s", s.Name, joinAnd(keys))
		}
		out[i] = string(s.Data[k])
	}
	return out, nil
}

// joinAnd joins words as in English prose: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
