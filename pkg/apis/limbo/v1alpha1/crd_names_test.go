package v1alpha1_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The generated CRDs name their kinds as DESIGN §2 does: Bundle, short name bdl;
// Tombstone. A marker dropped from the types would regenerate them without.
func TestCRDNames(t *testing.T) {
	for _, tc := range []struct {
		file       string
		kind       string
		shortNames []string
		scope      apiextensionsv1.ResourceScope
	}{
		{"limbo.dev_bundles.yaml", "Bundle", []string{"bdl"}, apiextensionsv1.NamespaceScoped},
		{"limbo.dev_tombstones.yaml", "Tombstone", nil, apiextensionsv1.NamespaceScoped},
	} {
		raw, err := os.ReadFile(filepath.Join(crdDir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if crd.Spec.Names.Kind != tc.kind || crd.Spec.Scope != tc.scope || !reflect.DeepEqual(crd.Spec.Names.ShortNames, tc.shortNames) {
			t.Errorf("%s: kind %q, scope %s, short names %q; want %q, %s, %q", tc.file, crd.Spec.Names.Kind, crd.Spec.Scope, crd.Spec.Names.ShortNames, tc.kind, tc.scope, tc.shortNames)
		}
	}
}
