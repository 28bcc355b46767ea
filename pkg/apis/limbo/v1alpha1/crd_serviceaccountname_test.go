package v1alpha1_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// spec.serviceAccountName becomes the user limbo impersonates,
// system:serviceaccount:<namespace>:<name>: a name that is not a ServiceAccount
// name (x:y) made a user of another shape. The CRD admits what
// --default-service-account admits (validation.IsDNS1123Subdomain), no more.
func TestServiceAccountNameIsADNSSubdomain(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(crdDir, "limbo.dev_bundles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, version := range crd.Spec.Versions {
		field := version.Schema.OpenAPIV3Schema.Properties["spec"].Properties["serviceAccountName"]
		if field.Pattern == "" || field.MaxLength == nil {
			t.Fatalf("%s: spec.serviceAccountName has pattern %q and maxLength %v, want both", version.Name, field.Pattern, field.MaxLength)
		}
		pattern := regexp.MustCompile(field.Pattern)
		for _, name := range []string{
			"limbo-tenant", "a", "0", "a.b", "a-b.c-d", "x:y", "system:serviceaccount:kube-system:admin", "A", "-a", "a-", "a..b",
			".a", "a.", "a_b", "a b", "a\nb", "é",
		} {
			want := len(validation.IsDNS1123Subdomain(name)) == 0
			if got := pattern.MatchString(name) && int64(len(name)) <= *field.MaxLength; got != want {
				t.Errorf("%s: spec.serviceAccountName %q admitted = %v, want %v (as --default-service-account)", version.Name, name, got, want)
			}
		}
	}
}
