package restmappings

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper maps the kinds in served and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	served map[schema.GroupVersionKind]bool
	asked  int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	for _, v := range versions {
		if gvk := gk.WithVersion(v); m.served[gvk] {
			return &meta.RESTMapping{GroupVersionKind: gvk, Resource: schema.GroupVersionResource{Group: gk.Group, Version: v, Resource: "things"}}, nil
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func TestRemembering(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	for _, tc := range []struct {
		name string
		// asks are the versions of each question, in order; later, when set,
		// are the kinds served from the second half of the questions on
		// (before: Widget v1 only).
		asks      [][]string
		later     map[schema.GroupVersionKind]bool
		wantAsked int
		wantErrs  int
	}{
		{name: "the same question, asked once", asks: [][]string{{"v1"}, {"v1"}, {"v1"}}, wantAsked: 1},
		{name: "other versions are other questions", asks: [][]string{{"v1"}, {"v1beta1", "v1"}, {"v1"}, {"v1beta1", "v1"}}, wantAsked: 2},
		{name: "a kind not served is asked again, and remembered once served",
			asks: [][]string{{"v2"}, {"v2"}, {"v2"}, {"v2"}}, later: map[schema.GroupVersionKind]bool{widget.WithVersion("v2"): true},
			wantAsked: 3, wantErrs: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delegate := &countingMapper{served: map[schema.GroupVersionKind]bool{widget.WithVersion("v1"): true}}
			r := Remember(delegate)
			errs := 0
			for i, versions := range tc.asks {
				if i == len(tc.asks)/2 && tc.later != nil {
					delegate.served = tc.later
				}
				m, err := r.RESTMapping(widget, versions...)
				if err != nil {
					if !meta.IsNoMatchError(err) {
						t.Fatalf("question %d: %v, want the delegate's NoKindMatch", i, err)
					}
					errs++
					continue
				}
				if m.GroupVersionKind.GroupKind() != widget || !slices.Contains(versions, m.GroupVersionKind.Version) {
					t.Errorf("question %d (%v): mapping of %v", i, versions, m.GroupVersionKind)
				}
			}
			if delegate.asked != tc.wantAsked || errs != tc.wantErrs {
				t.Errorf("delegate asked %d times, %d errors; want %d and %d", delegate.asked, errs, tc.wantAsked, tc.wantErrs)
			}
		})
	}
}
