package bundle

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/fanout"
	"github.com/limbo-dev/limbo/pkg/limboscan"
)

// startScan finds, once after the controller starts, every kind that holds
// objects of some Bundle, and watches it.
//
// Passes and teardowns look for a Bundle's objects among the kinds its spec and
// its status name, and the kinds the controller watches for any Bundle (see
// withWatchedKinds). That misses one object after a restart: one a pass created
// just before the controller stopped, whose kind only a status write that never
// succeeded named, the spec having dropped it since — no spec, no status and no
// watch names the kind any more. A teardown that missed it would let the Bundle
// go with the object still controlled by it, and the garbage collector would
// delete it at once, its deletionDelay ignored. The scan costs one
// metadata-only LIST of at most one object per namespaced kind (and namespace
// of the controller's), once; a kind found is watched, and the informer's first
// list brings the object's Bundle a pass that finds it.
type startScan struct {
	discovery limboscan.Discovery
	reader    client.Reader
	// namespaces are the controller's; empty is every namespace.
	namespaces []string
	// selector selects the objects of the controller's Bundles.
	selector labels.Selector
	watch    func(context.Context, schema.GroupVersionKind) error
	// backoff paces the retries of the kinds the scan could not read.
	backoff workqueue.TypedRateLimiter[string]
	// forbidden are the kinds the controller may not list: skipped, tried again
	// without an error, every forbiddenRetryMax at most.
	forbidden limboscan.Forbidden
	// unavailable are the API groups discovery could not read: skipped and
	// tried again as the forbidden kinds are.
	unavailable limboscan.Unavailable

	// done is set once every kind discovery named has been scanned once, read or
	// not: teardowns wait for it before they let a Bundle go (see scanned).
	done atomic.Bool
}

// NeedLeaderElection makes the scan run on the leader, whose passes need it.
func (s *startScan) NeedLeaderElection() bool { return true }

// scanned reports whether a teardown may let its Bundle go: the scan has been tried on
// every kind (or there is none to run). A kind it could not read (its LIST
// failed) is retried in the background without holding teardowns back: one
// unreadable API group must not keep every Bundle from being deleted.
func (s *startScan) scanned() bool { return s == nil || s.done.Load() }

// Waits before the scan tries again the kinds the controller may not list: the
// first, doubled each time, up to the most. A refusal may pass — RBAC applied
// together with the controller's Deployment, an aggregated role edited — and a
// kind skipped for good would be the miss the scan exists to prevent; one that
// lasts (RBAC narrowed to the kinds Bundles use) costs a refused LIST per kind
// every few minutes.
const (
	firstForbiddenRetry = 5 * time.Second
	forbiddenRetryMax   = 5 * time.Minute
)

// Start scans until every kind has been read once, or ctx ends.
func (s *startScan) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("start-scan")
	read := map[schema.GroupVersionKind]bool{}
	var forbiddenWait time.Duration
	for {
		forbidden, err := s.scan(ctx, read)
		var wait time.Duration
		switch {
		case err != nil:
			wait = s.backoff.When("scan")
			logger.Error(err, "scan of kinds for objects of Bundles; retrying", "after", wait)
		case forbidden > 0:
			forbiddenWait = min(max(2*forbiddenWait, firstForbiddenRetry), forbiddenRetryMax)
			wait = forbiddenWait
			logger.V(1).Info("every kind scanned but those the controller may not list or whose API group is unavailable; trying them again", "kinds", len(read), "notRead", forbidden, "after", wait)
		default:
			logger.V(1).Info("every kind scanned for objects of Bundles", "kinds", len(read))
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// scanConcurrency bounds the kinds the scan reads at once. A teardown that
// meets the scan waits for it to let its Bundle go, and the released objects
// wait with it; one LIST after the other, the scan took about a second after a
// restart (the soak found a released object deleted 2.1 s after its deadline).
const scanConcurrency = 8

// scan reads every kind discovery names and read does not hold, watches those
// that hold objects of Bundles, and records the kinds it read in read. It sets
// done once it has tried every kind discovery named, even when discovery
// failed for some API groups (it names the others; those groups are recorded
// in unavailable, not an error). It returns how many kinds the controller may
// not list and API groups discovery could not read (neither read, nor an
// error: tried again later) and the errors.
func (s *startScan) scan(ctx context.Context, read map[schema.GroupVersionKind]bool) (int, error) {
	kinds, discoveryErr := limboscan.Kinds(s.discovery, "watch")
	partial := s.unavailable.Note(ctx, discoveryErr)
	var todo []limboscan.Kind
	for _, k := range kinds {
		// Tombstones carry their Bundle's label, but they are the engine's
		// records, watched as such: never a Bundle's object (see sortedKinds).
		if !read[k.Kind] && k.Kind.GroupKind() != limbov1alpha1.TombstoneGVK.GroupKind() {
			todo = append(todo, k)
		}
	}
	failed := make([]error, len(todo))
	forbidden := make([]bool, len(todo))
	fanout.Each(scanConcurrency, len(todo), func(i int) {
		k := todo[i]
		holds, err := s.holds(ctx, k.Kind)
		if err != nil && s.forbidden.Skip(ctx, k.Kind, err) {
			forbidden[i] = true
			return
		}
		if err == nil && holds {
			err = s.watch(ctx, k.Kind)
		}
		if err != nil {
			failed[i] = fmt.Errorf("%s: %w", k.Resource, err)
		}
	})
	refused := 0
	for i, k := range todo {
		switch {
		case forbidden[i]:
			refused++
		case failed[i] == nil:
			read[k.Kind] = true
		}
	}
	if len(kinds) > 0 || discoveryErr == nil {
		s.done.Store(true)
	}
	if partial {
		// The groups read are scanned; the others are tried again later, as
		// the kinds the controller may not list (Start).
		groups, _ := limboscan.FailedGroups(discoveryErr)
		refused += len(groups)
		discoveryErr = nil
	}
	return refused, errors.Join(append([]error{discoveryErr}, failed...)...)
}

// holds reports whether a namespace of the controller's holds an object of gvk
// of one of its Bundles.
func (s *startScan) holds(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	for _, ns := range limboscan.Namespaces(s.namespaces) {
		if holds, err := limboscan.Holds(ctx, s.reader, gvk, ns, s.selector); err != nil || holds {
			return holds, err
		}
	}
	return false, nil
}
