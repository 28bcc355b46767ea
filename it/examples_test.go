package it

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Every Bundle in examples/ goes Ready on the local control plane, so that the
// examples the README points to keep working. Each file gets a fresh namespace,
// as `kubectl apply -n <ns> -f examples/<file>` would.
func TestExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples/*.yaml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			bundles := readBundles(t, file)
			ns := env.Namespace(t)
			for _, b := range bundles {
				if b.Namespace != "" {
					t.Fatalf("Bundle %s sets namespace %q: examples are applied with kubectl apply -n", b.Name, b.Namespace)
				}
				b.Namespace = ns
				if err := env.Client.Create(context.Background(), b); err != nil {
					t.Fatalf("create Bundle %s: %v", b.Name, err)
				}
			}
			for _, b := range bundles {
				ready := waitReady(t, b)
				if len(ready.Status.Resources) != len(b.Spec.Resources) {
					t.Errorf("Bundle %s: %d resource statuses for %d resources", b.Name, len(ready.Status.Resources), len(b.Spec.Resources))
				}
				for _, r := range ready.Status.Resources {
					if r.State != limbov1alpha1.ResourceReady {
						t.Errorf("Bundle %s resource %s is %s (%s)", b.Name, r.Name, r.State, r.Message)
					}
					if r.Object == nil {
						continue
					}
					// Every reference was resolved: no marker is left in the live object.
					live := getObject(t, schema.FromAPIVersionAndKind(r.Object.APIVersion, r.Object.Kind), r.Object.Namespace, r.Object.Name)
					if content, _ := json.Marshal(live.Object); bytes.Contains(content, []byte("!{")) {
						t.Errorf("Bundle %s resource %s: a !{...} marker is left in the live object: %s", b.Name, r.Name, content)
					}
				}
			}
		})
	}
}

// readBundles decodes every document of a YAML file, strictly (a field the API
// does not know is a mistake in the example); each must be a Bundle.
func readBundles(t testing.TB, file string) []*limbov1alpha1.Bundle {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*limbov1alpha1.Bundle
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		b := &limbov1alpha1.Bundle{}
		if err := yaml.UnmarshalStrict(doc, b); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if b.APIVersion == "" && b.Kind == "" && b.Name == "" {
			continue // only comments
		}
		if b.APIVersion != limbov1alpha1.GroupVersion.String() || b.Kind != "Bundle" {
			t.Fatalf("%s: a document of kind %s %s: examples hold Bundles only", file, b.APIVersion, b.Kind)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no Bundle", file)
	}
	return out
}
