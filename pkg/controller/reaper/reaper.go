package reaper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
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
	// forbidden are the kinds the controller may not list: skipped.
	forbidden limboscan.Forbidden
	// unavailable are the API groups the last full scan's discovery could not
	// read: skipped without an error, the full scan retried as an incomplete
	// one.
	unavailable limboscan.Unavailable

	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]bool
	// holders are the Bundles the last pass left an object to: SpecPassed
	// wakes the reaper for them, before its re-check.
	holders map[client.ObjectKey]bool
	// passedDuring are the Bundles SpecPassed named since the running pass
	// began: one it finds holding an object after it read that Bundle wakes it
	// at its end.
	passedDuring map[client.ObjectKey]bool
	// refusedSince are the objects whose last delete failed: since when, and
	// when last tried (refusedRetry).
	refusedSince map[types.UID]refusal
}

// refusal is how long an object's deletes have been failing.
type refusal struct{ since, tried time.Time }

// The retry of an object whose delete failed: as long after as its deletes
// have been failing, from minRefusedRetry up to maxRefusedRetry. A webhook or
// a policy refusing a released object's delete had the reaper list every known
// kind again, and send the refused DELETE with a DeleteFailed event, every 5 s
// for good.
const (
	minRefusedRetry = 5 * time.Second
	maxRefusedRetry = time.Minute
)

// refusedRetry records a failed delete of uid at now and returns how soon to
// try it again.
func (r *Reaper) refusedRetry(uid types.UID, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refusedSince == nil {
		r.refusedSince = map[types.UID]refusal{}
	}
	rf, ok := r.refusedSince[uid]
	if !ok {
		rf.since = now
	}
	rf.tried = now
	r.refusedSince[uid] = rf
	return min(max(now.Sub(rf.since), minRefusedRetry), maxRefusedRetry)
}

// notRefused forgets the failures of uid's deletes: it was decided without one.
func (r *Reaper) notRefused(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.refusedSince, uid)
}

// forgetStaleRefusals forgets the failures of objects not tried for twice the
// longest retry (gone meanwhile): once a pass, not at each object's decision.
func (r *Reaper) forgetStaleRefusals(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.refusedSince, func(_ types.UID, rf refusal) bool { return now.Sub(rf.tried) > 2*maxRefusedRetry })
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

// SpecPassed tells the reaper that a pass of a new spec of the Bundle key ran
// (its status's observedGeneration moved). An object the reaper leaves to that
// Bundle may be the reaper's again — the pass it waited for ran (holdRecheck),
// or the new spec dropped what it declared, or declared to adopt
// (declaredRecheck) — and it is looked at now rather than at its re-check, up
// to declaredRecheck later, maybe that long past its deadline. A Bundle the
// reaper holds nothing for costs nothing.
func (r *Reaper) SpecPassed(key client.ObjectKey) {
	r.mu.Lock()
	held := r.holders[key]
	if r.passedDuring != nil {
		r.passedDuring[key] = true
	}
	r.mu.Unlock()
	if held {
		r.Poke()
	}
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
	var retry time.Duration
	for {
		full := !r.Clock.Now().Before(nextFull)
		wait, err := r.pass(ctx, full)
		if full {
			var after time.Duration
			after, retry = r.afterFullScan(err, retry)
			nextFull = r.Clock.Now().Add(after)
		}
		if err != nil {
			logger.Error(err, "reaper pass")
		}
		timer := time.NewTimer(sleepAfterPass(wait, err, nextFull.Sub(r.Clock.Now())))
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

// failedPassRetry is how soon a pass that failed (in part) runs again: a LIST
// that failed between full scans is retried only by it.
const failedPassRetry = 5 * time.Second

// sleepAfterPass is how long Start sleeps after a pass that returned wait and
// err, the next full scan due in untilFull: until the soonest of the pass's
// wait, the full scan and, after a failure, failedPassRetry; at least a
// millisecond.
//
// Failures of one object's decision (objectFailure) are not: the pass's wait
// already brings the object back, as long after as its deletes have been
// failing (refusedRetry), and capped at failedPassRetry a refused delete was
// tried again every 5 s for good.
func sleepAfterPass(wait time.Duration, err error, untilFull time.Duration) time.Duration {
	if err != nil && !objectFailuresOnly(err) {
		wait = min(wait, failedPassRetry)
	}
	return max(min(wait, untilFull), time.Millisecond)
}

// objectFailure is the failure of one object's decision (its delete refused,
// say), which the pass's wait schedules again.
type objectFailure struct{ err error }

func (f objectFailure) Error() string { return f.err.Error() }
func (f objectFailure) Unwrap() error { return f.err }

// objectFailuresOnly reports whether err, a pass's, holds objectFailures only.
func objectFailuresOnly(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !objectFailuresOnly(e) {
				return false
			}
		}
		return true
	}
	_, ok := err.(objectFailure)
	return ok
}

// pass processes everything in limbo that no Bundle controls and returns how long
// until the soonest deadline.
func (r *Reaper) pass(ctx context.Context, full bool) (time.Duration, error) {
	var wake time.Time // the soonest instant to come back at; zero: none
	var errs []error
	kinds, err := r.kindsToScan(full)
	if full && r.unavailable.Note(ctx, err) {
		err = nil // the groups read are scanned; the full scan runs again soon for the others (Start)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", errScanIncomplete, err))
	}
	bundles := &passReads{byKey: map[client.ObjectKey]timedRead[*limbov1alpha1.Bundle]{}, byNamespace: map[string]timedRead[[]limbov1alpha1.Bundle]{},
		holders: map[client.ObjectKey]bool{}}
	r.mu.Lock()
	r.passedDuring = map[client.ObjectKey]bool{}
	r.mu.Unlock()
	for i := 0; i < len(kinds); i++ { // kinds grows when a kind is served at another version
		gvk := kinds[i]
		items, err := r.list(ctx, gvk)
		if gone, servedAs := r.kindGone(gvk, err); gone {
			// Its CRD (or API service) went, and its objects with it. Listed
			// between full scans, it would fail every pass for good; a full scan
			// finds it again if it comes back. A kind served at another version
			// (the template named one its CRD no longer serves, or one that is
			// not the preferred) is listed at that one, now and from then on.
			r.forgetKind(gvk)
			if !servedAs.Empty() && !slices.Contains(kinds, servedAs) {
				r.mu.Lock()
				r.kinds[servedAs] = true
				r.mu.Unlock()
				kinds = append(kinds, servedAs)
			}
			continue
		}
		if err != nil && r.forbidden.Skip(ctx, gvk, err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", errScanIncomplete, err))
			continue
		}
		pending, kindWake, kindErrs := r.reapKind(ctx, gvk, items, bundles)
		r.setPending(gvk, pending)
		wake = softdelete.Earliest(wake, kindWake)
		errs = append(errs, kindErrs...)
	}
	r.forgetStaleRefusals(r.Clock.Now())
	r.mu.Lock()
	if len(errs) > 0 { // what a failed listing or read left out is kept
		maps.Copy(bundles.holders, r.holders)
	}
	r.holders = bundles.holders
	// A pass of a holder's new spec that ended after this pass read the
	// holder: its SpecPassed found no hold yet.
	passed := false
	for k := range r.passedDuring {
		passed = passed || r.holders[k]
	}
	r.passedDuring = nil
	r.mu.Unlock()
	if passed {
		r.Poke()
	}
	if wake.IsZero() {
		return time.Duration(1<<63 - 1), errors.Join(errs...)
	}
	// Counted from now, not from the decisions: what the rest of the pass took
	// after an object was decided does not make its deadline late.
	return max(wake.Sub(r.Clock.Now()), 0), errors.Join(errs...)
}

// kindGone tells whether a LIST of gvk failed because the kind is no longer
// served at gvk's version: it has no REST mapping, or the LIST answered 404 and
// discovery no longer lists it. A 404 alone is not enough: the API server
// answers 404 for a served custom resource for a moment at times (after an etcd
// restart, just after its CRD was added), and a kind forgotten then would not be
// listed again before the next full scan (--resync-period) — its released
// objects left past their deadlines. Such a pass is incomplete, and retried
// within seconds. servedAs is the version of gvk's group and kind that
// discovery serves, if any: the objects are there, listed at that version.
func (r *Reaper) kindGone(gvk schema.GroupVersionKind, err error) (gone bool, servedAs schema.GroupVersionKind) {
	if err == nil || !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		return false, schema.GroupVersionKind{}
	}
	exact, as, known := limboscan.Serving(r.Discovery, gvk, "delete", "patch")
	if as != gvk {
		servedAs = as
	}
	if meta.IsNoMatchError(err) {
		return true, servedAs
	}
	return known && !exact, servedAs
}

// forgetKind stops listing gvk between full scans and takes its count out of the
// pending gauge.
func (r *Reaper) forgetKind(gvk schema.GroupVersionKind) {
	r.mu.Lock()
	delete(r.kinds, gvk)
	r.mu.Unlock()
	r.setPending(gvk, 0)
}

// setPending records how many objects in limbo the reaper found of gvk: the
// pending gauge sums the counts of every kind (a pass that lists only some
// kinds keeps the others' last count).
func (r *Reaper) setPending(gvk schema.GroupVersionKind, n int) {
	r.Engine.Metrics.SetPending("reaper/"+gvk.String(), n)
}

// errScanIncomplete marks a pass that could not list every kind it meant to:
// discovery failed (in part), or a kind's LIST did.
var errScanIncomplete = errors.New("scan incomplete")

// Waits before a full scan that could not list every kind runs again: the first,
// doubled with each failure in a row, up to the most (or FullScanInterval when
// that is shorter). Between full scans only kinds known to hold objects in limbo
// are listed, so a failed full scan left for the whole resync period would leave
// released objects of the other kinds undeleted past their deadlines that long.
const (
	firstFullScanRetry = 5 * time.Second
	maxFullScanRetry   = 5 * time.Minute
)

// afterFullScan is nextFullScan after a full pass that returned err: one that
// could not list every kind, or whose discovery missed API groups, is
// incomplete.
func (r *Reaper) afterFullScan(err error, retry time.Duration) (after, nextRetry time.Duration) {
	return r.nextFullScan(errors.Is(err, errScanIncomplete) || r.unavailable.Any(), retry)
}

// nextFullScan returns how long after a full scan the next one runs, and the
// retry wait to remember: FullScanInterval after a complete scan (none when the
// interval is 0 or less: the scan at start only), a backoff after an incomplete
// one; retry is the wait after the previous scan if it was incomplete, else 0.
func (r *Reaper) nextFullScan(incomplete bool, retry time.Duration) (after, nextRetry time.Duration) {
	if !incomplete {
		if r.FullScanInterval <= 0 {
			return time.Duration(1<<63 - 1), 0
		}
		return r.FullScanInterval, 0
	}
	limit := maxFullScanRetry
	if r.FullScanInterval > 0 {
		limit = min(limit, r.FullScanInterval)
	}
	next := min(max(2*retry, firstFullScanRetry), limit)
	return next, next
}

// reapKind processes items, gvk's objects in limbo that no Bundle controls, and
// returns how many are still in limbo, the instant of the soonest deadline or
// re-check (zero: none), and the errors.
func (r *Reaper) reapKind(ctx context.Context, gvk schema.GroupVersionKind, items []metav1.PartialObjectMetadata, bundles *passReads) (int, time.Time, []error) {
	var wake time.Time
	if len(items) == 0 {
		return 0, wake, nil
	}
	var errs []error
	r.mu.Lock()
	r.kinds[gvk] = true
	r.mu.Unlock()
	if r.OnKind != nil {
		if err := r.OnKind(gvk); err != nil {
			errs = append(errs, err)
		}
	}
	pending := 0
	for i := range items {
		obj := &items[i]
		// One instant for the hold and the decision: a deadline between two
		// readings of the clock would find obj due without its hold checked.
		now := r.Clock.Now()
		if recheck, err := r.heldByBundle(ctx, gvk, obj, bundles, now); err != nil || recheck > 0 {
			// The Bundle of obj's name decides (see heldByBundle). Fail closed.
			if err != nil {
				errs = append(errs, err)
				recheck = holdRecheck
			}
			pending++
			wake = softdelete.Earliest(wake, now.Add(recheck))
			continue
		}
		out := r.Engine.OrphanAt(ctx, obj, obj, softdelete.ClaimReleased, now)
		if !out.Gone {
			pending++
		}
		if out.Err != nil {
			errs = append(errs, objectFailure{out.Err})
			wake = softdelete.Earliest(wake, now.Add(r.refusedRetry(obj.GetUID(), now)))
		} else {
			r.notRefused(obj.GetUID())
		}
		if out.ReadAgain {
			wake = softdelete.Earliest(wake, now)
		}
		wake = softdelete.Earliest(wake, out.WakeAt)
	}
	return pending, wake, errs
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
	kinds := map[schema.GroupVersionKind]bool{}
	for _, k := range found {
		kinds[k.Kind] = true
	}
	return sortedKinds(kinds), err // a partial discovery failure still scans what it found
}

// holdRecheck is how soon the reaper looks again at an object it left to the
// Bundle of its name: the hold ends when that teardown or first pass does, which
// nothing tells the reaper, and the object may be due by then (the soak found
// released objects deleted 3 s late after a 5 s re-check).
const holdRecheck = time.Second

// heldByBundle reports whether a Bundle decides obj (of kind gvk) rather than
// the reaper (bundlespec.ReleasedHold), and if so how soon to look again (0: not
// held):
//   - the Bundle its limbo.dev/bundle label names declares obj (same group, kind
//     and name in a template): its pass adopts obj, which cancels the deletion —
//     a Bundle re-created under the same name, and a busy controller may reach it
//     only after obj's deadline — and until one manages to (the spec has an error
//     elsewhere, so nothing of it is processed, or reading obj failed) obj waits:
//     a spec error is never a reason to delete what the spec declares;
//   - that Bundle has a plugin resource and has not yet finished a pass of its
//     current spec: a generator may make obj again, which nothing tells before
//     the pass;
//   - obj was generated, and the plugin resource that made it is not Ready in
//     that Bundle's status (Blocked, failing, planning): it may make obj again
//     once it runs; the Bundle's pass that makes it Ready tells the reaper
//     (Poke), and declaredRecheck covers a poke lost;
//   - obj is due and another Bundle of its namespace declares it to adopt it:
//     that Bundle's pass cancels obj's countdown once its adopting apply
//     succeeds, which a dependency that is not Ready may hold back past obj's
//     deadline; deleting obj then would lose what the Bundle asked to keep.
//
// A hold that a pass or teardown in progress ends is looked at again after
// holdRecheck (nothing tells the reaper when it ends); one that lasts until
// someone fixes a Bundle (the Bundle of its name declares obj and its pass of
// the current spec ran without adopting obj, or an adopter waits) after
// declaredRecheck. Once a pass has adopted obj, it is controlled again (the
// fresh read of Engine.Orphan sees it). The Bundles are read from the API
// server, not the cache: an adopter may be of another shard, which this
// controller's cache does not hold, and one created a moment ago counts. seen
// keeps the Bundles a pass read for maxReadAge.
func (r *Reaper) heldByBundle(ctx context.Context, gvk schema.GroupVersionKind, obj metav1.Object, seen *passReads, now time.Time) (time.Duration, error) {
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetLabels()[limbov1alpha1.LabelBundle]}
	read := seen.byKey[key]
	if !read.fresh(r.Clock.Now()) {
		read = timedRead[*limbov1alpha1.Bundle]{value: &limbov1alpha1.Bundle{}, at: r.Clock.Now()}
		err := r.Reader.Get(ctx, key, read.value)
		switch {
		case apierrors.IsNotFound(err):
			read.value = nil
		case err != nil:
			return 0, fmt.Errorf("read Bundle %s: %w", key, err)
		}
		seen.byKey[key] = read
	}
	b := read.value
	namespaceBundles := func() ([]limbov1alpha1.Bundle, error) {
		ns := obj.GetNamespace()
		if read := seen.byNamespace[ns]; read.fresh(r.Clock.Now()) {
			return read.value, nil
		}
		at := r.Clock.Now()
		var list limbov1alpha1.BundleList
		if err := r.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list the Bundles of namespace %s: %w", ns, err)
		}
		seen.byNamespace[ns] = timedRead[[]limbov1alpha1.Bundle]{value: list.Items, at: at}
		return list.Items, nil
	}
	hold, holder, err := bundlespec.ReleasedHold(obj, gvk.GroupKind(), b, &seen.declarations, namespaceBundles, now)
	if hold != bundlespec.NotHeld {
		seen.holders[client.ObjectKey{Namespace: obj.GetNamespace(), Name: holder}] = true
	}
	switch hold {
	case bundlespec.HeldDeclared, bundlespec.HeldMayGenerate:
		return holdRecheck, err
	case bundlespec.HeldDeclaredNotAdopted, bundlespec.HeldForAdopter, bundlespec.HeldGeneratorNotReady:
		return declaredRecheck, err
	}
	return 0, err
}

// passReads are the Bundles one reaper pass read, so that each is read once in
// a while rather than once per object: an answer older than maxReadAge is read
// again. A pass that deletes many due objects one by one takes minutes, and a
// Bundle created (again) meanwhile that declares an object due later in the pass
// holds it (its pass adopts it): the pass's first answer must not decide for it.
type passReads struct {
	// byKey: the Bundle of an object's label; nil: there is none.
	byKey map[client.ObjectKey]timedRead[*limbov1alpha1.Bundle]
	// byNamespace: every Bundle of a namespace.
	byNamespace map[string]timedRead[[]limbov1alpha1.Bundle]
	// holders: the Bundles the pass left an object to (Reaper.holders).
	holders map[client.ObjectKey]bool
	// declarations: the templates of the Bundles of byKey, decoded once a
	// pass, and once more only for a Bundle read again changed.
	declarations bundlespec.DeclarationsMemo
}

// timedRead is an answer of the API server and when it was read.
type timedRead[T any] struct {
	value T
	at    time.Time
}

// maxReadAge is how long a pass reuses a Bundle it read (see passReads): the
// window in which a Bundle created after the read does not hold what it
// declares, as a Bundle's pass has between its re-read and its DELETE.
const maxReadAge = time.Second

// fresh reports whether read, made at read.at, may still be used at now.
func (read timedRead[T]) fresh(now time.Time) bool {
	return !read.at.IsZero() && now.Sub(read.at) < maxReadAge
}

// declaredRecheck is how soon the reaper looks again at an object whose Bundle
// declares it but has not adopted it: a spec error or a failing read, which
// someone has to fix. A Bundle that stops declaring the object gets it deleted at
// most this late.
const declaredRecheck = 30 * time.Second

func sortedKinds(set map[schema.GroupVersionKind]bool) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
