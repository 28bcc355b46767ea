package restmappings

import (
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Remembering is a RESTMapper that keeps the mappings its delegate found; every
// other question goes to the delegate.
type Remembering struct {
	newDelegate func() (meta.RESTMapper, error)

	mu       sync.RWMutex
	delegate meta.RESTMapper
	found    map[key]*meta.RESTMapping
}

type key struct {
	kind     schema.GroupKind
	versions string
}

var _ meta.ResettableRESTMapper = (*Remembering)(nil)

// Remember wraps a delegate newDelegate makes, and makes another at each Reset.
func Remember(newDelegate func() (meta.RESTMapper, error)) (*Remembering, error) {
	delegate, err := newDelegate()
	if err != nil {
		return nil, err
	}
	return &Remembering{newDelegate: newDelegate, delegate: delegate, found: map[key]*meta.RESTMapping{}}, nil
}

// Reset forgets every mapping: the remembered ones and the delegate's, whose
// place a new delegate takes. If making one fails, the old delegate stays (a
// kind gone is then still mapped, as before Reset) and the remembered mappings
// are forgotten all the same.
func (r *Remembering) Reset() {
	delegate, err := r.newDelegate()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.delegate = delegate
	}
	r.found = map[key]*meta.RESTMapping{}
}

func (r *Remembering) current() meta.RESTMapper {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.delegate
}

// RESTMapping returns the mapping of gk in the first of versions served (the
// preferred version when none is given), from memory once the delegate has
// found it. Callers must not change the mapping: it is shared.
func (r *Remembering) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	k := key{kind: gk, versions: strings.Join(versions, ",")}
	r.mu.RLock()
	m, ok := r.found[k]
	delegate := r.delegate
	r.mu.RUnlock()
	if ok {
		return m, nil
	}
	m, err := delegate.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delegate == delegate { // not the answer of a delegate Reset replaced
		r.found[k] = m
	}
	return m, nil
}

// KindFor asks the delegate.
func (r *Remembering) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return r.current().KindFor(resource)
}

// KindsFor asks the delegate.
func (r *Remembering) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return r.current().KindsFor(resource)
}

// ResourceFor asks the delegate.
func (r *Remembering) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return r.current().ResourceFor(input)
}

// ResourcesFor asks the delegate.
func (r *Remembering) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return r.current().ResourcesFor(input)
}

// RESTMappings asks the delegate.
func (r *Remembering) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return r.current().RESTMappings(gk, versions...)
}

// ResourceSingularizer asks the delegate.
func (r *Remembering) ResourceSingularizer(resource string) (string, error) {
	return r.current().ResourceSingularizer(resource)
}

// NotServed reports whether err, the answer to a request about objects of a
// kind, says that the API server does not serve the kind: no REST mapping for it
// (meta.NoKindMatchError: its CRD is not installed, or is gone) or a 404 on its
// resource (the mapping remembered, the CRD gone since). Either way the kind has
// no objects. A 404 can also pass by (an API server whose storage restarts):
// where that matters, confirm with discovery (the reaper does).
func NotServed(err error) bool {
	return err != nil && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err))
}
