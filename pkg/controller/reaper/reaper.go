// Package reaper runs the soft-delete engine for objects that no Bundle controls any
// more but that are still in limbo: objects a Bundle's teardown released with their
// deletion delay. It finds them across kinds by the limbo.dev/pending-deletion label
// and deletes each at its deadline, to the second.
package reaper

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Reaper is a leader-elected runnable: one loop that lists what is in limbo,
// processes it, and sleeps until the soonest deadline, a poke, or the next full scan.
type Reaper struct {
	// Client writes (stamps, deletes); Reader lists straight from the API server, so
	// that scanning every kind starts no informer.
	Client    client.Client
	Reader    client.Reader
	Discovery Discovery
	Engine    *softdelete.Engine
	Clock     clock.PassiveClock
	// FullScanInterval is how often every kind is scanned; between full scans only
	// kinds known to hold objects in limbo are listed.
	FullScanInterval time.Duration
	// Namespaces restricts the scan; empty scans all.
	Namespaces []string
	// Shard restricts the scan to this controller's shard (objects carry their
	// Bundle's shard labels); nil scans every shard.
	Shard *shard.Selector
	// OnKind is told of every kind found in limbo, so that its objects are watched
	// (an event then pokes the reaper: an expedite is honoured at once).
	OnKind func(schema.GroupVersionKind) error

	poke chan struct{}

	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]bool
}

// Discovery is what the reaper needs of discovery: the kinds it may find in limbo.
// *discovery.DiscoveryClient implements it.
type Discovery = limboscan.Discovery

// New returns a Reaper.
func New(c client.Client, reader client.Reader, d Discovery, engine *softdelete.Engine, fullScan time.Duration) *Reaper {
	return &Reaper{Client: c, Reader: reader, Discovery: d, Engine: engine, Clock: clock.RealClock{}, FullScanInterval: fullScan,
		poke: make(chan struct{}, 1), kinds: map[schema.GroupVersionKind]bool{}}
}

// NeedLeaderElection makes the reaper run on the leader only.
func (r *Reaper) NeedLeaderElection() bool { return true }

// Observe is called with every managed object event; an object in limbo that no
// Bundle controls pokes the reaper.
func (r *Reaper) Observe(obj client.Object) {
	if !softdelete.Released(obj) {
		return
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		r.mu.Lock()
		r.kinds[gvk] = true
		r.mu.Unlock()
	}
	r.Poke()
}

// Poke makes the reaper run a pass soon.
func (r *Reaper) Poke() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Start runs the loop until ctx ends.
func (r *Reaper) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("reaper")
	nextFull := r.Clock.Now()
	for {
		full := !r.Clock.Now().Before(nextFull)
		if full {
			nextFull = r.Clock.Now().Add(r.FullScanInterval)
		}
		wait, err := r.pass(ctx, full)
		if err != nil {
			logger.Error(err, "reaper pass")
			wait = min(wait, 5*time.Second)
		}
		wait = min(wait, nextFull.Sub(r.Clock.Now()))
		timer := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.poke:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// pass processes everything in limbo that no Bundle controls and returns how long
// until the soonest deadline.
func (r *Reaper) pass(ctx context.Context, full bool) (time.Duration, error) {
	kinds, err := r.kindsToScan(full)
	if err != nil {
		return time.Hour, err
	}
	wait := time.Duration(1<<63 - 1)
	var errs []error
	bundles := map[client.ObjectKey]bool{} // Bundle -> being torn down, for this pass
	pending := 0
	for _, gvk := range kinds {
		items, err := r.list(ctx, gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(items) == 0 {
			continue
		}
		r.mu.Lock()
		r.kinds[gvk] = true
		r.mu.Unlock()
		if r.OnKind != nil {
			if err := r.OnKind(gvk); err != nil {
				errs = append(errs, err)
			}
		}
		for i := range items {
			obj := &items[i]
			if held, err := r.heldByBundle(ctx, obj, bundles); err != nil || held {
				// The Bundle of obj's name decides: its teardown (--cascade=orphan
				// cancels the countdown), or its first pass (it may adopt obj).
				// Fail closed.
				if err != nil {
					errs = append(errs, err)
				}
				pending++
				wait = min(wait, holdRecheck)
				continue
			}
			out := r.Engine.Orphan(ctx, obj, obj, softdelete.ClaimReleased)
			if !out.Gone {
				pending++
			}
			if out.Err != nil {
				errs = append(errs, out.Err)
				wait = min(wait, 5*time.Second)
			}
			if out.Requeue {
				wait = min(wait, out.RequeueAfter)
			}
		}
	}
	if full || pending > 0 {
		r.Engine.Metrics.SetPending("reaper", pending)
	}
	return wait, errors.Join(errs...)
}

// list returns gvk's objects in limbo that no Bundle controls.
func (r *Reaper) list(ctx context.Context, gvk schema.GroupVersionKind) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	for _, ns := range limboscan.Namespaces(r.Namespaces) {
		items, err := limboscan.List(ctx, r.Reader, gvk, ns, r.Shard.And(labels.Everything()))
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if softdelete.Released(&item) {
				out = append(out, item)
			}
		}
	}
	return out, nil
}

// kindsToScan is every namespaced kind that can be listed and deleted (full scan),
// or the kinds known to hold objects in limbo.
func (r *Reaper) kindsToScan(full bool) ([]schema.GroupVersionKind, error) {
	if !full {
		r.mu.Lock()
		defer r.mu.Unlock()
		return sortedKinds(r.kinds), nil
	}
	found, err := limboscan.Kinds(r.Discovery, "delete", "patch")
	if err != nil && len(found) == 0 {
		return nil, err // a partial discovery failure still scans what it found
	}
	kinds := map[schema.GroupVersionKind]bool{}
	for _, k := range found {
		kinds[k.Kind] = true
	}
	return sortedKinds(kinds), nil
}

// holdRecheck is how soon the reaper looks again at an object it left to the
// Bundle of its name: the hold ends when that teardown or first pass does, which
// nothing tells the reaper, and the object may be due by then (the soak found
// released objects deleted 3 s late after a 5 s re-check).
const holdRecheck = time.Second

// heldByBundle reports whether the Bundle named by obj's limbo.dev/bundle label
// decides obj rather than the reaper: it is being deleted (its teardown decides),
// or it exists and has not yet finished a pass of its current spec — a Bundle
// re-created under the same name may declare obj and adopt it, which cancels the
// deletion, and a busy controller may reach it only after obj's deadline. Once
// that pass has run, an object it declares is controlled again (the fresh read
// of Engine.Orphan sees it) and one it does not declare is the reaper's. seen
// memoises the answer for one pass.
func (r *Reaper) heldByBundle(ctx context.Context, obj metav1.Object, seen map[client.ObjectKey]bool) (bool, error) {
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetLabels()[limbov1alpha1.LabelBundle]}
	if held, ok := seen[key]; ok {
		return held, nil
	}
	var b limbov1alpha1.Bundle
	err := r.Reader.Get(ctx, key, &b)
	switch {
	case apierrors.IsNotFound(err):
		seen[key] = false
	case err != nil:
		return false, fmt.Errorf("read Bundle %s: %w", key, err)
	default:
		seen[key] = !b.DeletionTimestamp.IsZero() || b.Status.ObservedGeneration < b.Generation
	}
	return seen[key], nil
}

func sortedKinds(set map[schema.GroupVersionKind]bool) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
