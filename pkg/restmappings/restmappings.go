package restmappings

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Remembering is a RESTMapper that keeps the mappings its delegate found; every
// other question goes to the delegate.
type Remembering struct {
	// Listed tells whether the API server lists a group version (ListedBy), to
	// tell a kind not served from one whose discovery failed (see
	// unknownResources). Nil: a failed discovery is taken as the delegate words
	// it.
	Listed func(schema.GroupVersion) (bool, error)

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
		return nil, r.unknownResources(err)
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
	m, err := r.current().RESTMappings(gk, versions...)
	return m, r.unknownResources(err)
}

// unknownResources turns err, a mapping's failure, into one that is not a
// meta.NoMatchError when it only says that the resources of a group version the
// API server lists could not be read. controller-runtime's mapper words a group
// version whose resources aggregated discovery did not give (an aggregated API
// whose service is unavailable, listed with freshness "Stale") as ErrResourceDiscoveryFailed
// wrapping a NoResourceMatchError — as it words a group that is gone. Taken for
// "not served", a teardown would find none of the kind's objects and let its
// Bundle go: the garbage collector then deletes them, their delays ignored, once
// the service is back. A listing that fails leaves err unknown too.
func (r *Remembering) unknownResources(err error) error {
	var failed *apiutil.ErrResourceDiscoveryFailed
	if err == nil || r.Listed == nil || !errors.As(err, &failed) || !meta.IsNoMatchError(err) {
		return err
	}
	for gv := range *failed {
		switch listed, lerr := r.Listed(gv); {
		case lerr != nil:
			return fmt.Errorf("%s; discovery, asked whether %s is served, failed: %v", err, gv, lerr)
		case listed:
			return fmt.Errorf("the API server lists %s but its resources are not known (an aggregated API whose service is unavailable?): %s", gv, err)
		}
	}
	return err
}

// ListedBy is a Remembering's Listed that asks d: a group version is listed
// when discovery names it among its group's versions, or as one whose
// resources it could not give (aggregated discovery's freshness "Stale", which
// client-go reports as a failed group version and leaves out of the group).
func ListedBy(d discovery.AggregatedDiscoveryInterfaceWithContext) func(schema.GroupVersion) (bool, error) {
	return func(gv schema.GroupVersion) (bool, error) {
		// The RESTMapper interface has no context; discovery's own timeout
		// bounds the request.
		groups, _, failed, err := d.GroupsAndMaybeResourcesWithContext(context.Background())
		if err != nil {
			return false, err
		}
		if _, ok := failed[gv]; ok {
			return true, nil
		}
		for _, g := range groups.Groups {
			if g.Name == gv.Group && slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == gv.Version }) {
				return true, nil
			}
		}
		return false, nil
	}
}

// ResourceSingularizer asks the delegate.
func (r *Remembering) ResourceSingularizer(resource string) (string, error) {
	return r.current().ResourceSingularizer(resource)
}

// NotServed reports whether err, the answer to a request about objects of a
// kind, says that the API server does not serve the kind: no REST mapping for it
// (meta.NoKindMatchError: its CRD is not installed, or is gone; a Remembering
// with Listed tells a group version whose discovery failed apart) or a 404 on its
// resource (the mapping remembered, the CRD gone since). Either way the kind has
// no objects. A 404 can also pass by (an API server whose storage restarts):
// where that matters, confirm with discovery (the reaper does).
func NotServed(err error) bool {
	return err != nil && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err))
}
