package bundlespec

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// failingMapper answers every mapping with err.
type failingMapper struct {
	meta.RESTMapper
	err error
}

func (m failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, m.err
}

// A kind the API server does not serve is an unknown kind, for good; one
// whose discovery failed (an aggregated API unavailable, a request that timed
// out) is not known either way, and is said to be unavailable, which is
// retried: it was taken for unknown, and the Bundle stayed Stalled until its
// spec changed or the resync came.
func TestHeldKindTellsUnknownFromUnavailable(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "x.example.com", Version: "v1", Kind: "Widget"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"not served", &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{"v1"}}, limbov1alpha1.ReasonUnknownKind},
		{"discovery failed", errors.New("the API server lists x.example.com/v1 but its resources are not known (an aggregated API whose service is unavailable?)"), limbov1alpha1.ReasonKindUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reason, err := HeldKind(failingMapper{err: tc.err}, gvk); reason != tc.want || err == nil {
				t.Errorf("HeldKind = %q, %v; want %q and an error", reason, err, tc.want)
			}
		})
	}
}
