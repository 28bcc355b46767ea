package bundle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/softdelete"
	"github.com/limbo-dev/limbo/pkg/statuswrite"
)

// Requeue intervals for what no watch event announces.
const (
	// retryInterval paces retries of failed API calls.
	retryInterval = 5 * time.Second
	// conflictRecheckInterval re-checks resources blocked by an object limbo does
	// not own: that object is not labelled, so no watch tells us it went away.
	conflictRecheckInterval = 30 * time.Second
	// teardownInterval paces teardown waves between watch events.
	teardownInterval = 2 * time.Second
	// maxFailingRetry bounds how long a teardown wave whose own writes keep
	// failing waits before it tries again (failingRetry).
	maxFailingRetry = time.Minute
	// waveUnseenRequeue follows a teardown wave of objects the cache did not
	// show, all released or gone (nextWave): nothing else brings the next.
	waveUnseenRequeue = 10 * time.Millisecond
	// startScanWait is how soon a teardown held back by the start scan (see
	// startScan) looks again. It costs no request, and the scan runs once, for
	// well under a second after a start: the Bundle goes soon after it.
	startScanWait = 100 * time.Millisecond
	// conflictRetry is how soon a Bundle whose write met a Conflict is read and
	// decided again: the newer version is on its way to the cache.
	conflictRetry = 100 * time.Millisecond
	// supersededRecheck is how soon a pass that found the cache behind limbo's
	// own apply of an object looks again, should the watch event that brings
	// the applied copy have been missed.
	supersededRecheck = time.Second
)

// itemsBudget bounds the time a pass or a teardown pass spends acting on one
// plugin resource's object items (softdelete.MsgItemsDeferred): a backend whose
// writes hang — a dying cluster's admission webhook, each write waiting out its
// timeout — held a Bundle worker for every item in turn, and with it the
// deadlines of every other Bundle. What is left goes on in the next pass.
const itemsBudget = 10 * time.Second

// Reconciler reconciles Bundles. One Reconcile is one pass over one Bundle (see
// pass); the reconciler holds what outlives a pass.
type Reconciler struct {
	// Client reads from the cache (labelled objects only) and writes.
	Client client.Client
	// PluginClient is the plugins' Request.Client (plugin.RequestClient: reads
	// of the kinds the cache holds whole from it, of the rest from the API
	// server); nil: Client.
	PluginClient client.Client
	// APIReader reads from the API server, for objects the cache cannot hold: an
	// existing object that limbo does not manage yet.
	APIReader client.Reader
	// Discovery confirms that a kind whose LIST answered 404 is no longer
	// served (listError: labelledFresh, objectItemsInLimbo); nil: a 404 is taken for the kind's end.
	Discovery limboscan.Discovery
	Mapper    meta.RESTMapper
	Recorder  record.EventRecorder
	Engine    *softdelete.Engine
	Plugins   *plugin.Registry
	Clock     clock.PassiveClock
	Metrics   *Metrics
	// Shard puts the objects a Bundle applies in its shard (see package shard).
	Shard *shard.Selector
	// DefaultServiceAccount is impersonated for Bundles that name none.
	DefaultServiceAccount string
	// ApplyConcurrency bounds the objects of one pass applied at once (the
	// independent resources of a dependency wave); below 1 counts as 1.
	ApplyConcurrency int
	// OnHoldEnded is told when a teardown has let its Bundle go, or a pass made
	// a plugin resource Ready (nil: nobody).
	OnHoldEnded func()
	// OnSpecPassed is told of a Bundle whose status now observes a new
	// generation (nil: nobody).
	OnSpecPassed func(client.ObjectKey)

	watcher *watcher
	// startScan finds the kinds holding objects of Bundles after a start;
	// teardowns wait for it before they let a Bundle go (nil: nothing to wait
	// for).
	startScan *startScan
	applied   appliedCache
	// bodies are the bodies of metadata-only objects that references read.
	bodies bodies
	// cascades are the Bundles seen deleted with --cascade=orphan or
	// --cascade=foreground.
	cascades cascades
	// crdsServing are when CRDs were last seen to start serving a kind.
	crdsServing crdsServing
	// statuses writes Bundle status, and knows it ahead of the cache.
	statuses statuswrite.Writer[limbov1alpha1.BundleStatus, *limbov1alpha1.BundleStatus]
	// plans and teardowns run plugin calls beside the passes.
	plans     *backgroundCalls[*plugin.Result]
	teardowns *backgroundCalls[*plugin.TeardownResult]
	// alarms keep the deadlines of Bundles whose pass failed.
	alarms *alarms
	// bindingModes are the StorageClasses' volume binding modes read lately.
	bindingModes bindingModes
	// inTheWay are the objects the passes found in the way of their Bundles.
	inTheWay objectsInTheWay
	// onboarded are the Bundles a sharded controller looked for everything of.
	onboarded onboardedBundles
	// quickRetries pace the passes that come back at once, again and again.
	quickRetries quickRetries
}

// quickRetries counts, per Bundle, the passes in a row that asked to come back
// within conflictRetry (pass.quick): a Conflict on the Bundle's status, an
// object's write on a copy the cache had not caught up with (ReadAgain), a
// claim deferred on a Bundle read ahead of it. Each means "a newer version is
// on its way to the cache"; one that does not come (a watch lagging behind an
// API server under load) made a full pass, and its writes, every 100 ms for as
// long as it lagged. After maxQuickRetries in a row the wait doubles each time,
// up to maxQuickRetryWait — never past a countdown's end (pass.paced); any
// other pass ends the run.
type quickRetries struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

const (
	maxQuickRetries   = 5
	maxQuickRetryWait = 10 * time.Second
)

// start begins counting one Reconcile of key: a run of quick retries goes on
// only if it asks for one (quickRetry.retry), and ends, whatever path it
// returns by, otherwise (quickRetry.end).
func (q *quickRetries) start(key types.NamespacedName) *quickRetry {
	return &quickRetry{q: q, key: key}
}

// quickRetry is one Reconcile's part in its Bundle's run of quick retries.
type quickRetry struct {
	q     *quickRetries
	key   types.NamespacedName
	asked bool
	n     int
}

// retry records that the Reconcile asks for a quick retry, and returns how
// many did in a row, this one included; asked again, it counts once.
func (r *quickRetry) retry() int {
	if r.asked {
		return r.n
	}
	r.asked = true
	r.q.mu.Lock()
	defer r.q.mu.Unlock()
	if r.q.n == nil {
		r.q.n = map[types.NamespacedName]int{}
	}
	r.q.n[r.key]++
	r.n = r.q.n[r.key]
	return r.n
}

// end ends the Bundle's run of quick retries unless this Reconcile asked for
// one.
func (r *quickRetry) end() {
	if r.asked {
		return
	}
	r.q.mu.Lock()
	defer r.q.mu.Unlock()
	delete(r.q.n, r.key)
}

// quickRetryWait is the wait before the nth quick retry in a row.
func quickRetryWait(n int) time.Duration {
	if over := n - maxQuickRetries; over > 0 {
		return min(conflictRetry<<min(over, 10), maxQuickRetryWait)
	}
	return conflictRetry
}

// Reconcile runs one pass over a Bundle, or one step of its teardown. A Conflict
// on the Bundle (a newer version is on its way to the cache) is an ordinary
// requeue, not an error. The errors of the Bundle's objects are errors, even a
// Conflict: the work queue backs off, where a flat requeue would retry one that
// persists ten times a second for good.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	quick := r.quickRetries.start(req.NamespacedName)
	defer quick.end()
	result, err := r.reconcile(ctx, req, quick)
	if conflictOnBundle(err) {
		// A write of the Bundle outside a pass's status (its finalizer, a
		// teardown's): soon, paced as a pass's quick retries are, never past
		// the deadline that came with the error.
		after := quickRetryWait(quick.retry())
		if result.RequeueAfter > 0 {
			after = min(after, result.RequeueAfter)
		}
		return ctrl.Result{RequeueAfter: after}, nil
	}
	if r.alarms != nil {
		if err != nil && result.RequeueAfter > 0 {
			r.alarms.set(req.NamespacedName, result.RequeueAfter)
			return ctrl.Result{}, err
		}
		r.alarms.clear(req.NamespacedName)
	}
	return result, err
}

// leftShardRetry is how soon a pass that found its Bundle gone from the shard,
// or changed, comes back if no event brings it first: the cache's event of the
// change normally does, within moments.
const leftShardRetry = time.Second

// conflictOnBundle reports whether err is a Conflict on a write of the Bundle
// itself (its status, its finalizer) — the API server's answer names the
// resource — and not on one of its objects, in a pass or a teardown: those back
// off like other errors (a template copied with its resourceVersion conflicts at
// every apply).
func conflictOnBundle(err error) bool {
	var status apierrors.APIStatus
	if !apiconflict.Is(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Group == limbov1alpha1.GroupVersion.Group && d.Kind == "bundles"
}

// reconcile is one pass over the Bundle of req, or one step of its teardown; a
// pass that asks to come back at once says so to quick.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request, quick *quickRetry) (ctrl.Result, error) {
	var b limbov1alpha1.Bundle
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetStatus(req.String())
			r.statuses.Forget(req.NamespacedName)
			r.inTheWay.forget(req.NamespacedName)
			r.onboarded.forget(req.NamespacedName)
			// A plugin's state of the Bundle was made by a call of it: the
			// calls know every UID the plugins may remember.
			for _, uid := range append(r.plans.forgetBundle(req.NamespacedName), r.teardowns.forgetBundle(req.NamespacedName)...) {
				r.Plugins.ForgetBundle(uid)
			}
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// A pass starts from the status limbo last wrote, which the cache may not
	// show yet: a status decided on the older one would not be written.
	r.statuses.Known(&b, &b.Status)
	// Every write of the Bundle's objects from here on, teardown included, is made
	// as its ServiceAccount (limbo's own kinds stay limbo's: see impersonation).
	ctx = impersonation.WithServiceAccount(ctx, b.Namespace, r.serviceAccountOf(&b))
	if !b.DeletionTimestamp.IsZero() {
		res, err := r.teardown(ctx, &b) // Reconcile paces its Conflicts on the Bundle
		r.teardownFailed(ctx, &b, err)
		return res, err
	}
	if letGo := b.Annotations[limbov1alpha1.AnnotationTornDown] == string(b.UID); letGo || !controllerutil.ContainsFinalizer(&b, limbov1alpha1.FinalizerTeardown) {
		orig := b.DeepCopy()
		controllerutil.AddFinalizer(&b, limbov1alpha1.FinalizerTeardown)
		// The mark of a finalizer let go by hand goes: left on a live
		// Bundle, it would let any later write take the finalizer away
		// again. A copy's (restored, re-applied from kubectl get -o yaml,
		// kept in Git) names another Bundle's UID: the policy ignores it,
		// and it stays, not fought over with the tool that applies it.
		if letGo {
			delete(b.Annotations, limbov1alpha1.AnnotationTornDown)
		}
		if err := r.Client.Patch(ctx, &b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	p := newPass(r, &b)
	p.run(ctx)
	status := p.status()
	if p.left || (r.Shard != nil && (len(p.announcements) > 0 || !equality.Semantic.DeepEqual(b.Status, status)) && !p.stillInShard(ctx)) {
		// Not this shard's any more, or changed since the cache showed it:
		// the status, and what the pass would announce, are the other
		// shard's, or the next pass's.
		return ctrl.Result{RequeueAfter: leftShardRetry}, errors.Join(p.errs...)
	}
	p.emitAnnouncements()
	r.recordStatus(req.String(), status, int(status.PendingDeletionCount)) // everything a pass finds in limbo is the Bundle's
	generatorReady := pluginBecameReady(&b, &b.Status, &status)
	specPassed := status.ObservedGeneration != b.Status.ObservedGeneration
	err := r.writeStatus(ctx, &b, status)
	if err == nil || errors.Is(err, errStatusReduced) {
		if generatorReady && r.OnHoldEnded != nil {
			r.OnHoldEnded() // released objects it generated may be held no more (bundlespec.ReleasedHold)
		}
		if specPassed && r.OnSpecPassed != nil {
			r.OnSpecPassed(req.NamespacedName) // what the reaper leaves to the Bundle may be the reaper's again
		}
	}
	if err != nil {
		if conflictOnBundle(err) && len(p.errs) == 0 {
			// A newer version is on its way to the cache: soon, paced.
			p.after(conflictRetry)
			return p.paced(quick.retry()), nil
		}
		if conflictOnBundle(err) {
			// The pass's own errors back off, as they would have had the
			// status been written; the next pass writes it.
			return p.failedResult(), errors.Join(p.errs...)
		}
		// The pass's deadlines go with the error, for Reconcile's alarm: what it
		// stamped is due then, whatever its status says.
		return p.failedResult(), err
	}
	quickRetries := 0
	if p.quick && len(p.errs) == 0 {
		quickRetries = quick.retry()
	}
	switch {
	case len(p.errs) > 0:
		// Transient: the work queue's rate limiter backs off, and
		// controller_runtime_reconcile_errors_total counts them. The pass's
		// deadline goes with the error, for Reconcile's alarm.
		return p.failedResult(), errors.Join(p.errs...)
	case len(p.specErrs) > 0 && r.kindComing(ctx, &b, p.specErrs):
		// A CRD established a moment ago that discovery does not serve yet.
		return ctrl.Result{RequeueAfter: kindComingRetry}, nil
	case p.specErrs.Has(limbov1alpha1.ReasonKindUnavailable):
		// Discovery failed for a kind: retried with the work queue's backoff,
		// not left until the next spec change or resync.
		return p.failedResult(), p.specErrs
	case len(p.specErrs) > 0:
		// Retrying does not help; the next spec change triggers a pass (and a
		// CRD that starts serving a kind it names: see bundlesNamingKindOf).
		return ctrl.Result{}, reconcile.TerminalError(p.specErrs)
	}
	return p.paced(quickRetries), nil
}

// pluginBecameReady tells whether a plugin resource of b is Ready in after and
// was not in before.
func pluginBecameReady(b *limbov1alpha1.Bundle, before, after *limbov1alpha1.BundleStatus) bool {
	for _, res := range b.Spec.Resources {
		if res.Plugin != nil && after.ResourceReady(res.Name) && !before.ResourceReady(res.Name) {
			return true
		}
	}
	return false
}

// serviceAccountOf is the ServiceAccount whose rights b's writes have ("": limbo's).
func (r *Reconciler) serviceAccountOf(b *limbov1alpha1.Bundle) string {
	return impersonation.ServiceAccountOf(b, r.DefaultServiceAccount)
}

// writeStatus writes status when it differs from what the Bundle has.
func (r *Reconciler) writeStatus(ctx context.Context, b *limbov1alpha1.Bundle, status limbov1alpha1.BundleStatus) error {
	err := client.IgnoreNotFound(r.statuses.Patch(ctx, r.Client, b, &b.Status, &status))
	if !statusTooLarge(err) {
		return err
	}
	// Not written, the last status stood: the Tombstone controller's gate and
	// the reaper believe its resources' states (a Bundle shown Ready while a
	// resource is not had its plugin's Tombstones executed), and only the log
	// said why. The error stays: the pass is retried with backoff.
	reduced := reducedStatus(status, err)
	if rerr := client.IgnoreNotFound(r.statuses.Patch(ctx, r.Client, b, &b.Status, &reduced)); rerr != nil {
		return errors.Join(err, fmt.Errorf("write the status reduced: %w", rerr))
	}
	r.Recorder.Eventf(b, corev1.EventTypeWarning, limbov1alpha1.EventStatusTooLarge,
		"the API server refuses the Bundle's status as too large (%v): written without the resources' messages and with %d of %d pendingDeletions entries; split the Bundle",
		err, len(reduced.PendingDeletions), reduced.PendingDeletionCount)
	return fmt.Errorf("%w: %w", errStatusReduced, err)
}

// errStatusReduced is wrapped by writeStatus's error when the status was
// written reduced: what decides deletions was written.
var errStatusReduced = errors.New("the status was written reduced")

// bundleLeft forgets, on the event, what the Reconciler remembers of a Bundle
// that left its cache — deleted, or moved to another shard — and lets every
// event through: moved away and back before a reconcile ran (the work queue
// merges the two events, and the reconcile finds the Bundle there, so its
// NotFound path never ran), the status this shard wrote before the move stood
// in for the other shard's, and its onboarding scan, the look for what the
// other shard left in limbo, was skipped.
func (r *Reconciler) bundleLeft() predicate.Funcs {
	return predicate.Funcs{DeleteFunc: func(e event.DeleteEvent) bool {
		key := client.ObjectKeyFromObject(e.Object)
		r.statuses.Forget(key)
		r.onboarded.forget(key)
		return true
	}}
}

// objectDeleted forgets what the Reconciler keeps of obj, an object of a watched
// kind that is gone, whoever deleted it (a namespace's deletion, the garbage
// collector, a user): a UID never comes back, and only limbo's own deletes
// forgot their records before, so every other deletion left its entries for
// good.
func (r *Reconciler) objectDeleted(obj client.Object) {
	r.bodies.forget(obj.GetUID())
	r.applied.forget(obj.GetUID())
}

// pluginClient is the client of the plugins' requests.
func (r *Reconciler) pluginClient() client.Client {
	if r.PluginClient != nil {
		return r.PluginClient
	}
	return r.Client
}
