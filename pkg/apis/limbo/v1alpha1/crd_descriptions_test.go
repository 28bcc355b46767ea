package v1alpha1_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdDir holds the CRDs that `make generate` writes from this package's types.
const crdDir = "../../../../crds"

// TestEveryFieldHasADescription reads the generated CRDs and asserts that every
// property of every served version's schema has a description, so that
// `kubectl explain` explains every field of the API.
func TestEveryFieldHasADescription(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(crdDir, "limbo.dev_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no CRDs in %s", crdDir)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, version := range crd.Spec.Versions {
			if version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
				t.Errorf("%s %s: no schema", crd.Name, version.Name)
				continue
			}
			root := version.Schema.OpenAPIV3Schema
			if root.Description == "" {
				t.Errorf("%s %s: the kind has no description", crd.Name, version.Name)
			}
			missing := undescribed(*root, crd.Spec.Names.Singular, true)
			for _, path := range missing {
				t.Errorf("%s %s: %s has no description", crd.Name, version.Name, path)
			}
		}
	}
}

// TestUndescribedFindsNestedFields checks the walk itself: it must descend into
// objects, array items and additionalProperties.
func TestUndescribedFindsNestedFields(t *testing.T) {
	described := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Description: "d", Properties: props}
	}
	schema := described(map[string]apiextensionsv1.JSONSchemaProps{
		"metadata": {Type: "object"},
		"a":        described(map[string]apiextensionsv1.JSONSchemaProps{"b": {Type: "string"}}),
		"list": {Type: "array", Description: "d", Items: &apiextensionsv1.JSONSchemaPropsOrArray{
			Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"c": {Type: "string"},
				"e": {Type: "string", Description: "d"},
			}},
		}},
		"map": {Type: "object", Description: "d", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
			Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"f": {Type: "string"},
			}},
		}},
	})
	got := strings.Join(undescribed(schema, "x", true), " ")
	want := "x.a.b x.list[].c x.map{}.f"
	if got != want {
		t.Errorf("undescribed = %q, want %q", got, want)
	}
}

// undescribed returns the paths of the properties under schema that have no
// description. The root's metadata is exempt: the API server serves ObjectMeta's
// own documented schema there, whatever the CRD says.
func undescribed(schema apiextensionsv1.JSONSchemaProps, path string, root bool) []string {
	var missing []string
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		property := schema.Properties[name]
		if root && name == "metadata" {
			continue
		}
		child := path + "." + name
		if property.Description == "" {
			missing = append(missing, child)
		}
		missing = append(missing, undescribed(property, child, false)...)
	}
	if schema.Items != nil && schema.Items.Schema != nil {
		missing = append(missing, undescribed(*schema.Items.Schema, path+"[]", false)...)
	}
	if schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil {
		missing = append(missing, undescribed(*schema.AdditionalProperties.Schema, path+"{}", false)...)
	}
	return missing
}
