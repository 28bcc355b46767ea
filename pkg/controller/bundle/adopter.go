package bundle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// An object another Bundle of its namespace declares to adopt (limbo.dev/adopt)
// is never deleted by the Bundle it leaves: a pass at the end of its countdown
// (pass.handOver) and a teardown (releaseForAdoption) release it to the adopter
// instead, and the reaper holds it while a Bundle declares it to adopt it.

// adopters finds, for the objects of b that one teardown wave or one pass is
// about to delete or release, another Bundle of b's namespace, not being
// deleted, that declares the object to adopt it (limbo.dev/adopt). A single
// controller finds adopters in its cache (an index of the objects Bundles adopt).
// A shard's cache holds only its own Bundles, and the adopter may be of another
// shard (Bundles of one namespace can be): a sharded controller reads the
// namespace's Bundles from the API server, as the reaper does — only when it is
// about to delete or release an object, which is rare beside the applies, and
// then at most once every adoptersMaxAge for the wave or pass (each lookup
// listed them again: a teardown of N objects listed every Bundle of the
// namespace N times). An adopter created meanwhile is seen by the next listing:
// the age bounds how late, as a listing per object bounded it by one request.
type adopters struct {
	r *Reconciler
	b *limbov1alpha1.Bundle

	// mu guards the sharded controller's listing; lookups run concurrently (a
	// pass's orphans are handed over side by side).
	mu       sync.Mutex
	listedAt time.Time
	listed   []limbov1alpha1.Bundle
}

// adoptersMaxAge is how long a sharded controller's listing of a namespace's
// Bundles answers a wave's or a pass's lookups.
const adoptersMaxAge = time.Second

func (r *Reconciler) adopters(b *limbov1alpha1.Bundle) *adopters {
	return &adopters{r: r, b: b}
}

// of is the adopter of o; nil when there is none. It is shared (a cached
// Bundle, or the listing's): read it, never change it.
func (a *adopters) of(ctx context.Context, o client.Object) (*limbov1alpha1.Bundle, error) {
	gvk := o.GetObjectKind().GroupVersionKind()
	var candidates []limbov1alpha1.Bundle
	var err error
	if a.r.Shard == nil {
		var list limbov1alpha1.BundleList
		key := bundlespec.AdoptionKey(gvk.GroupKind(), o.GetName())
		err = a.r.Client.List(ctx, &list, client.InNamespace(a.b.Namespace), client.MatchingFields{adoptionIndex: key}, client.UnsafeDisableDeepCopy)
		candidates = list.Items
	} else {
		candidates, err = a.listing(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("list the Bundles adopting %s %s: %w", gvk.Kind, o.GetName(), err)
	}
	return bundlespec.Adopter(candidates, gvk.GroupKind(), o.GetName(), a.b.Name), nil
}

// listing is the namespace's Bundles as the API server lists them, listed again
// once the last listing is adoptersMaxAge old (or failed).
func (a *adopters) listing(ctx context.Context) ([]limbov1alpha1.Bundle, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.r.Clock.Now()
	if !a.listedAt.IsZero() && now.Sub(a.listedAt) < adoptersMaxAge {
		return a.listed, nil
	}
	var list limbov1alpha1.BundleList
	if err := a.r.APIReader.List(ctx, &list, client.InNamespace(a.b.Namespace)); err != nil {
		a.listedAt = time.Time{}
		return nil, err
	}
	a.listed, a.listedAt = list.Items, now
	return a.listed, nil
}

// releaseForAdoption tells whether the teardown releases o, and to which
// adopter (nil: none named): another Bundle of b's namespace that declares o to adopt it
// (limbo.dev/adopt). The teardown then releases o, even without a delay, instead
// of deleting it with b: the reaper holds a released object while a Bundle
// declares it to adopt it, the adopter adopts it (an object moved by deleting the
// Bundle it came from keeps its data), and if the adopter goes first the reaper
// deletes it — what the teardown would have done. Released, o is no evidence of
// --cascade=orphan for the next teardown pass either, as a merely disowned object
// would be. A failed lookup releases too, with no adopter named: the reaper
// decides on the API server's Bundles.
func (a *adopters) releaseForAdoption(ctx context.Context, o client.Object) (*limbov1alpha1.Bundle, bool) {
	adopter, err := a.of(ctx, o)
	switch {
	case err != nil:
		return nil, true
	case adopter != nil:
		return adopter, true
	}
	return nil, false
}
