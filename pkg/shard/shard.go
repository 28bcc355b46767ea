package shard

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
)

// Selector is a controller's shard: a label selector on Bundles. The nil Selector
// selects everything and copies no labels (a single controller).
type Selector struct {
	selector labels.Selector
	// keys are the label keys the selector's requirements name, sorted.
	keys []string
}

// Parse parses a --watch-label-selector value (Kubernetes label selector syntax,
// for example "limbo.dev/shard=a" or "!limbo.dev/shard"). An empty value returns
// nil: every Bundle.
func Parse(expr string) (*Selector, error) {
	if expr == "" {
		return nil, nil
	}
	sel, err := labels.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("--watch-label-selector %q: %w", expr, err)
	}
	reqs, _ := sel.Requirements()
	if len(reqs) == 0 {
		return nil, nil
	}
	keys := map[string]bool{}
	for _, r := range reqs {
		keys[r.Key()] = true
	}
	s := &Selector{selector: sel}
	for k := range keys {
		s.keys = append(s.keys, k)
	}
	sort.Strings(s.keys)
	return s, nil
}

// String returns the selector in label selector syntax ("" for every Bundle).
func (s *Selector) String() string {
	if s == nil {
		return ""
	}
	return s.selector.String()
}

// LabelSelector is the selector of this shard's Bundles and, because their labels
// are copied, of their objects and Tombstones.
func (s *Selector) LabelSelector() labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	return s.selector
}

// And returns sel narrowed to this shard.
func (s *Selector) And(sel labels.Selector) labels.Selector {
	if s == nil {
		return sel
	}
	reqs, _ := s.selector.Requirements()
	return sel.Add(reqs...)
}

// Matches reports whether an object with these labels is in this shard.
func (s *Selector) Matches(objectLabels map[string]string) bool {
	return s.LabelSelector().Matches(labels.Set(objectLabels))
}

// CopyLabels sets, in to, the bundle's labels under the selector's keys, and
// removes those keys the Bundle does not have (an object of a Bundle outside
// every keyed shard must not claim one), and returns to (a new map if to is
// nil). It is how an object or a Tombstone is put in its Bundle's shard.
func (s *Selector) CopyLabels(bundleLabels, to map[string]string) map[string]string {
	if to == nil {
		to = map[string]string{}
	}
	if s == nil {
		return to
	}
	for _, k := range s.keys {
		if v, ok := bundleLabels[k]; ok {
			to[k] = v
		} else {
			delete(to, k)
		}
	}
	return to
}

// PatchLabels sets, in labels (a merge patch's metadata.labels), the bundle's
// labels under the selector's keys, and null for those keys the Bundle does not
// have: CopyLabels as a merge patch writes it. It is how a release hands an
// object over to a Bundle of another shard.
func (s *Selector) PatchLabels(bundleLabels map[string]string, labels map[string]any) {
	if s == nil {
		return
	}
	for _, k := range s.keys {
		if v, ok := bundleLabels[k]; ok {
			labels[k] = v
		} else {
			labels[k] = nil
		}
	}
}
