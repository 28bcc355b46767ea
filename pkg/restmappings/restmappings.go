package restmappings

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Remembering is a RESTMapper that keeps the mappings its delegate found; every
// other question goes to the delegate.
type Remembering struct {
	meta.RESTMapper
	found sync.Map // key → *meta.RESTMapping
}

type key struct {
	kind     schema.GroupKind
	versions string
}

// Remember wraps delegate.
func Remember(delegate meta.RESTMapper) *Remembering {
	return &Remembering{RESTMapper: delegate}
}

// RESTMapping returns the mapping of gk in the first of versions served (the
// preferred version when none is given), from memory once the delegate has
// found it. Callers must not change the mapping: it is shared.
func (r *Remembering) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	k := key{kind: gk, versions: strings.Join(versions, ",")}
	if m, ok := r.found.Load(k); ok {
		return m.(*meta.RESTMapping), nil
	}
	m, err := r.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	r.found.Store(k, m)
	return m, nil
}
