package it

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// ConfigMaps and Secrets are most of what Bundles hold, and limbo caches them as
// metadata only (docs/design-decisions.md): a value a reference reads from one is
// read on demand. Any read of either kind as a whole object through the cached
// client would start a second, full informer, which holds every managed
// ConfigMap's data and every managed Secret in the controller's memory. After a
// Bundle that creates both kinds and reads a value from each, every watch the
// controller has of them asks for metadata only.
func TestConfigMapsAndSecretsAreWatchedAsMetadataOnly(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "credentials"},
		"data": map[string]any{"password": "c2VjcmV0"}}
	intoSecret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "app-credentials"},
		"data": map[string]any{"DB_PASSWORD": "!{pw}"}}
	b := createBundle(t, ns, "metadata-cache",
		objectResource(t, "settings", configMap("settings", map[string]any{"host": "db.example"}, nil)),
		objectResource(t, "credentials", secret),
		objectResource(t, "app", configMap("app", map[string]any{"url": "postgres://!{host}"}, nil),
			limbov1alpha1.Reference{Name: "host", Resource: "settings", Path: "data.host"}),
		objectResource(t, "app-credentials", intoSecret,
			limbov1alpha1.Reference{Name: "pw", Resource: "credentials", Path: "data.password"}),
	)
	waitReady(t, b)
	if got := stringField(getObject(t, configMapGVK, ns, "app"), "data", "url"); got != "postgres://db.example" {
		t.Fatalf("app data.url = %q, want the value read from settings", got)
	}

	watched := map[string]bool{}
	for _, w := range env.ControllerWatches() {
		resource := path.Base(w.Path)
		if resource != "configmaps" && resource != "secrets" {
			continue
		}
		watched[resource] = true
		if !strings.Contains(w.Accept, "as=PartialObjectMetadata") {
			t.Errorf("the controller watches %s as whole objects (%s, Accept %q); want metadata only", resource, w.Path, w.Accept)
		}
	}
	for _, resource := range []string{"configmaps", "secrets"} {
		if !watched[resource] {
			t.Errorf("the controller started no watch of %s; want a metadata-only one (watches: %s)", resource, formatWatches(env.ControllerWatches()))
		}
	}
}

func formatWatches(watches []testenv.Request) string {
	var out []string
	for _, w := range watches {
		out = append(out, fmt.Sprintf("%s [%s]", w.Path, w.Accept))
	}
	return strings.Join(out, ", ")
}
