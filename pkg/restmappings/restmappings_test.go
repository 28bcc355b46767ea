package restmappings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
			r, err := Remember(func() (meta.RESTMapper, error) { return delegate, nil })
			if err != nil {
				t.Fatal(err)
			}
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

// A kind that is no longer served is still mapped, from memory and by a
// delegate that discovered it, until Reset: then a new delegate answers.
func TestRememberingReset(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	served := map[schema.GroupVersionKind]bool{widget.WithVersion("v1"): true}
	var delegates []*countingMapper
	r, err := Remember(func() (meta.RESTMapper, error) {
		// A delegate knows what was served when it was made, as the dynamic
		// mapper knows what it discovered.
		d := &countingMapper{served: maps.Clone(served)}
		delegates = append(delegates, d)
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Fatalf("served: %v", err)
	}
	delete(served, widget.WithVersion("v1")) // its CRD is deleted
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Fatalf("before Reset the mapping is remembered, got %v", err)
	}
	r.Reset()
	if _, err := r.RESTMapping(widget, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("after Reset: %v, want NoKindMatch from a new delegate", err)
	}
	if len(delegates) != 2 || delegates[1].asked != 1 {
		t.Errorf("%d delegates made, the new one asked %d times; want 2 and 1", len(delegates), delegates[len(delegates)-1].asked)
	}
	served[widget.WithVersion("v1")] = true // installed again
	r.Reset()
	if _, err := r.RESTMapping(widget, "v1"); err != nil {
		t.Errorf("installed again: %v", err)
	}

	// A delegate that cannot be made leaves the old one.
	failing, err := Remember(func() (meta.RESTMapper, error) {
		if len(delegates) > 3 {
			return nil, errors.New("discovery down")
		}
		d := &countingMapper{served: maps.Clone(served)}
		delegates = append(delegates, d)
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	failing.Reset()
	if _, err := failing.RESTMapping(widget, "v1"); err != nil {
		t.Errorf("the old delegate stays when no new one can be made: %v", err)
	}
}

func TestNotServed(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}, true},
		{apierrors.NewNotFound(gr, ""), true},
		{fmt.Errorf("list: %w", apierrors.NewNotFound(gr, "")), true},
		{apierrors.NewForbidden(gr, "", errors.New("no")), false},
		{errors.New("connection refused"), false},
	} {
		if got := NotServed(tc.err); got != tc.want {
			t.Errorf("NotServed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
