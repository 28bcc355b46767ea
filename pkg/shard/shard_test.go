package shard

import (
	"maps"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		wantNil bool
		wantErr bool
	}{
		{expr: "", wantNil: true},
		{expr: " ", wantNil: true}, // no requirement: no shard either
		{expr: "limbo.dev/shard=a"},
		{expr: "!limbo.dev/shard"},
		{expr: "limbo.dev/shard in (a,b),tier!=x"},
		{expr: "a b", wantErr: true},
		{expr: "!!x", wantErr: true},
	} {
		s, err := Parse(tc.expr)
		if (err != nil) != tc.wantErr {
			t.Errorf("Parse(%q) error = %v, want error %v", tc.expr, err, tc.wantErr)
			continue
		}
		if err == nil && (s == nil) != tc.wantNil {
			t.Errorf("Parse(%q) = %v, want nil %v", tc.expr, s, tc.wantNil)
		}
	}
}

// Two shards, "limbo.dev/shard=a" and "!limbo.dev/shard", split Bundles, and the
// labels copied from a Bundle put its objects in the same shard as the Bundle.
func TestShardsSplitBundlesAndTheirObjects(t *testing.T) {
	a, err := Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}
	rest, err := Parse("!limbo.dev/shard")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		bundleLabels map[string]string
		// template is what the object's template says; the Bundle's value wins.
		template  map[string]string
		wantShard string // "a", "rest" or "none"
	}{
		{name: "labelled a", bundleLabels: map[string]string{"limbo.dev/shard": "a", "team": "x"}, wantShard: "a"},
		{name: "unlabelled", bundleLabels: map[string]string{"team": "x"}, wantShard: "rest"},
		{name: "labelled b: neither", bundleLabels: map[string]string{"limbo.dev/shard": "b"}, wantShard: "none"},
		{name: "template claims a", bundleLabels: nil, template: map[string]string{"limbo.dev/shard": "a"}, wantShard: "rest"},
		{name: "template claims another", bundleLabels: map[string]string{"limbo.dev/shard": "a"}, template: map[string]string{"limbo.dev/shard": "b", "app": "y"}, wantShard: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, copier := range []*Selector{a, rest} {
				objLabels := copier.CopyLabels(tc.bundleLabels, maps.Clone(tc.template))
				inA, inRest := a.Matches(objLabels), rest.Matches(objLabels)
				if inA != a.Matches(tc.bundleLabels) || inRest != rest.Matches(tc.bundleLabels) {
					t.Errorf("copied by %s: object labels %v in a=%v rest=%v; Bundle in a=%v rest=%v", copier, objLabels, inA, inRest, a.Matches(tc.bundleLabels), rest.Matches(tc.bundleLabels))
				}
				got := "none"
				switch {
				case inA && inRest:
					got = "both"
				case inA:
					got = "a"
				case inRest:
					got = "rest"
				}
				if got != tc.wantShard {
					t.Errorf("copied by %s: shard = %s, want %s", copier, got, tc.wantShard)
				}
				if tc.template["app"] != "" && objLabels["app"] != tc.template["app"] {
					t.Errorf("other labels of the template are lost: %v", objLabels)
				}
				// PatchLabels is CopyLabels as a merge patch: applied to the
				// template, the same labels.
				patch := map[string]any{}
				copier.PatchLabels(tc.bundleLabels, patch)
				patched := maps.Clone(tc.template)
				if patched == nil {
					patched = map[string]string{}
				}
				for k, v := range patch {
					if v == nil {
						delete(patched, k)
					} else {
						patched[k] = v.(string)
					}
				}
				if !maps.Equal(patched, objLabels) {
					t.Errorf("patched by %s: %v (patch %v), copied: %v", copier, patched, patch, objLabels)
				}
			}
		})
	}
}

func TestNilSelectsEverythingAndCopiesNothing(t *testing.T) {
	var s *Selector
	in := map[string]string{"x": "y"}
	if got := s.CopyLabels(map[string]string{"limbo.dev/shard": "a"}, in); !reflect.DeepEqual(got, map[string]string{"x": "y"}) {
		t.Errorf("CopyLabels = %v", got)
	}
	patch := map[string]any{"x": "y"}
	if s.PatchLabels(map[string]string{"limbo.dev/shard": "a"}, patch); !reflect.DeepEqual(patch, map[string]any{"x": "y"}) {
		t.Errorf("PatchLabels: patch %v", patch)
	}
	if !s.Matches(nil) || !s.LabelSelector().Empty() || s.String() != "" {
		t.Errorf("nil selector must select everything")
	}
	base := labels.SelectorFromSet(labels.Set{"k": "v"})
	if s.And(base).String() != "k=v" {
		t.Errorf("nil And = %s", s.And(base))
	}
}

func TestAndNarrows(t *testing.T) {
	s, err := Parse("!limbo.dev/shard")
	if err != nil {
		t.Fatal(err)
	}
	sel := s.And(labels.SelectorFromSet(labels.Set{"limbo.dev/pending-deletion": "true"}))
	if !sel.Matches(labels.Set{"limbo.dev/pending-deletion": "true"}) || sel.Matches(labels.Set{"limbo.dev/pending-deletion": "true", "limbo.dev/shard": "a"}) {
		t.Errorf("And = %s does not narrow", sel)
	}
}
