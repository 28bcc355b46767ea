package plugintest

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// SpecCase is a plugin resource's spec and what validating it gives.
type SpecCase struct {
	// Spec is the spec as JSON; "" is a resource without a spec.
	Spec string
	// Want is the whole error message, or "" for a valid spec.
	Want string
}

// ExpectSpecs validates each case's spec as the Bundle reconciler does
// (plugin.Registry.ValidateSpec: p's schema, then its SpecChecker) and reports
// every case whose outcome differs from Want.
func ExpectSpecs(t testing.TB, p plugin.Plugin, cases []SpecCase) {
	t.Helper()
	r, err := plugin.NewRegistry(p)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	name := p.Describe().Name
	for _, tc := range cases {
		var spec *apiextensionsv1.JSON
		if tc.Spec != "" {
			spec = &apiextensionsv1.JSON{Raw: []byte(tc.Spec)}
		}
		err := r.ValidateSpec(name, spec, nil)
		switch {
		case tc.Want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.Spec, err)
		case tc.Want != "" && (err == nil || err.Error() != tc.Want):
			t.Errorf("%s:\n got %v\nwant %s", tc.Spec, err, tc.Want)
		}
	}
}
