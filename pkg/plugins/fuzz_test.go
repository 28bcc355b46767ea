package plugins_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins"
)

// FuzzValidateSpec: whatever a Bundle's plugin spec holds, the check that
// decides whether the plugin runs at all never panics (a panic would stop every
// Bundle's passes, not only the bad one's), answers the same twice, and
// refuses in the shape the Bundle's status and the validator report: field
// errors under spec, or the spec's JSON error. The seeds are the plugin specs
// of examples/, so the corpus follows what users copy.
func FuzzValidateSpec(f *testing.F) {
	registry, err := plugins.NewRegistry(plugins.Options{NamespaceGCInterval: time.Hour, NamespaceGCDelay: time.Minute})
	if err != nil {
		f.Fatal(err)
	}
	names := registry.Names()
	seeds := examplePluginSpecs(f)
	if len(seeds) == 0 {
		f.Fatal("no plugin resource found in examples/")
	}
	for name, specs := range seeds {
		i := indexOf(names, name)
		if i < 0 {
			f.Fatalf("examples/ use plugin %q, which is not registered (%q)", name, names)
		}
		for _, spec := range specs {
			f.Add(uint8(i), spec)
		}
	}
	for i := range names {
		for _, s := range []string{`{}`, `null`, `[]`, `"x"`, `{"interval":"-1s"}`, `{"timeout":"9999999999h"}`,
			`{"clusterCIDR":"0.0.0.0/0"}`, `{"nodeSelector":{"a":"b"},"taint":{}}`, `{"kubeConfigSecretRef":null}`} {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, plugin uint8, raw []byte) {
		name := names[int(plugin)%len(names)]
		spec := &apiextensionsv1.JSON{Raw: raw}
		err := registry.ValidateSpec(name, spec, nil)
		again := registry.ValidateSpec(name, spec, nil)
		if errorText(err) != errorText(again) {
			t.Fatalf("%s: ValidateSpec(%q) answered %v, then %v", name, raw, err, again)
		}
		if len(raw) > 0 && !json.Valid(raw) {
			if err == nil || !strings.HasPrefix(err.Error(), "spec: ") {
				t.Fatalf("%s: ValidateSpec(%q), not JSON, = %v; want the spec's JSON error", name, raw, err)
			}
			return
		}
		if err == nil {
			return
		}
		var agg utilerrors.Aggregate
		if !errors.As(err, &agg) {
			t.Fatalf("%s: ValidateSpec(%q) = %T %v, want an aggregate of field errors", name, raw, err, err)
		}
		for _, e := range agg.Errors() {
			var fe *field.Error
			if !errors.As(e, &fe) || (fe.Field != "spec" && !strings.HasPrefix(fe.Field, "spec.") && !strings.HasPrefix(fe.Field, "spec[")) {
				t.Fatalf("%s: ValidateSpec(%q): %v is not an error of a field under spec", name, raw, e)
			}
		}
	})
}

// examplePluginSpecs reads the plugin specs of every Bundle in examples/, by
// plugin name.
func examplePluginSpecs(f *testing.F) map[string][][]byte {
	paths, err := filepath.Glob("../../examples/*/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	specs := map[string][][]byte{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var b limbov1alpha1.Bundle
			if err := yaml.Unmarshal([]byte(doc), &b); err != nil || b.Kind != "Bundle" {
				continue
			}
			for _, r := range b.Spec.Resources {
				if r.Plugin == nil {
					continue
				}
				raw := []byte("{}")
				if r.Plugin.Spec != nil {
					raw = r.Plugin.Spec.Raw
				}
				specs[r.Plugin.Name] = append(specs[r.Plugin.Name], raw)
			}
		}
	}
	return specs
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
