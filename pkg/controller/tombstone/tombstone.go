package tombstone

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/controller/retry"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
	"github.com/limbo-dev/limbo/pkg/statuswrite"
	"github.com/limbo-dev/limbo/pkg/uninstall"
)

// Backoff of failed external deletes: 1s, 2s, 4s, ... capped.
const (
	baseBackoff = time.Second
	maxBackoff  = 5 * time.Minute
)

// backoffLeft is how long ts must still wait before its next delete: after a
// failure, the backoff of its last attempt, counted from when that attempt was
// marked. It is read from status, so that neither a restart nor another trigger
// of the Tombstone cuts it short. A Tombstone deleted since its last attempt
// (kubectl delete: force) does not wait: the user asked for a delete now.
//
// Both times are whole seconds once stored, one of the API server's clock, one
// of the controller's: a force in the second of the last attempt counts as
// after it (a force a moment after a failed attempt waited out the backoff,
// up to five minutes), and the forced attempt is marked after the force
// (attemptTime), so that its failure backs off again.
func backoffLeft(now time.Time, ts *limbov1alpha1.Tombstone) time.Duration {
	s := ts.Status
	if s.LastError == "" || s.LastAttemptTime == nil {
		return 0
	}
	if !ts.DeletionTimestamp.IsZero() && !ts.DeletionTimestamp.Time.Before(s.LastAttemptTime.Truncate(time.Second)) {
		return 0
	}
	return max(s.LastAttemptTime.Add(retryBackoff(s.Attempts)).Sub(now), 0)
}

// attemptTime is the status.lastAttemptTime of an attempt made at now on ts:
// now, or, for a Tombstone being deleted (forced), at least a second past its
// deletionTimestamp — the whole second stored must tell the forced attempt from
// one before the force (backoffLeft), whatever the two clocks' difference.
func attemptTime(now time.Time, ts *limbov1alpha1.Tombstone) time.Time {
	if ts.DeletionTimestamp.IsZero() {
		return now
	}
	if after := ts.DeletionTimestamp.Truncate(time.Second).Add(time.Second); after.After(now) {
		return after
	}
	return now
}

// retryBackoff is how long after its attempts-th failed delete (1 for the
// first) a Tombstone's item is tried again: baseBackoff doubled per earlier
// failure, at most maxBackoff.
func retryBackoff(attempts int32) time.Duration {
	return min(baseBackoff<<min(max(attempts-1, 0), 20), maxBackoff)
}

// Reconciler reconciles Tombstones.
type Reconciler struct {
	Client client.Client
	// PluginClient is the plugins' Request.Client (plugin.RequestClient); nil:
	// Client.
	PluginClient client.Client
	Reader       client.Reader
	Plugins      *plugin.Registry
	Engine       *softdelete.Engine
	Recorder     record.EventRecorder
	Clock        clock.PassiveClock
	// DefaultServiceAccount is the ServiceAccount of the Bundles that name none
	// (--default-service-account); Client writes (and reads Secrets) as a
	// Bundle's when it is an impersonation.Client.
	DefaultServiceAccount string

	// done remembers Tombstones whose item this process deleted, so that a stale
	// cached copy (finalizer not yet gone) never deletes the item a second time.
	// It is keyed by name, holding the UID, so that the entry goes when the
	// Tombstone does.
	done sync.Map
	// statuses writes Tombstone status, and knows it ahead of the cache.
	statuses statuswrite.Writer[limbov1alpha1.TombstoneStatus, *limbov1alpha1.TombstoneStatus]
	// deletes runs the external deletes beside the workers.
	deletes *externalDeletes
}

// NewReconciler returns a Reconciler whose external deletes that outlast
// plugin.CallWait trigger their Tombstone through done, at most perResource at a
// time per plugin resource.
func NewReconciler(c client.Client, reader client.Reader, plugins *plugin.Registry, engine *softdelete.Engine, done chan<- event.GenericEvent, perResource int) *Reconciler {
	return &Reconciler{Client: c, Reader: reader, Plugins: plugins, Engine: engine,
		Recorder: engine.Recorder, Clock: engine.Clock, // one recorder for every controller
		deletes: newExternalDeletes(done, perResource)}
}

// SetupWithManager registers the Tombstone controller. A backend is sent at most
// as many deletes at a time as there are workers.
func SetupWithManager(mgr ctrl.Manager, c, pluginClient client.Client, defaultServiceAccount string, plugins *plugin.Registry, engine *softdelete.Engine, workers int) error {
	done := make(chan event.GenericEvent, 1024)
	r := NewReconciler(c, mgr.GetAPIReader(), plugins, engine, done, workers)
	r.PluginClient = pluginClient
	r.DefaultServiceAccount = defaultServiceAccount
	return ctrl.NewControllerManagedBy(mgr).Named("tombstone").For(&limbov1alpha1.Tombstone{}, builder.WithPredicates(notStatusOnly)).
		WatchesRawSource(source.Channel(done, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: retry.RateLimiter()}).Complete(r)
}

// notStatusOnly drops the controller's own status writes (attempts, lastError):
// reacting to them would retry at once and defeat the backoff. Annotations count
// (kubectl limbo expedite moves the stamp), as do finalizers and deletion.
var notStatusOnly = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
			!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers())
	},
}

// Reconcile runs the state machine for one Tombstone. Waiting is decided on the
// cached copy; the external delete is fenced: it is decided again on fresh reads
// of the Tombstone and its Bundle (any read error: nothing happens), never while
// the Bundle is being torn down (its teardown cancels the Tombstone), and only
// after an attempt marker was written guarded by the resourceVersion, so that a
// cancel that lands first wins. The delete itself runs beside the worker
// (externalDeletes); a reconcile that finds it running does nothing, and the
// one its end triggers records it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer r.deletes.reconciled(req.NamespacedName)
	var cached limbov1alpha1.Tombstone
	if err := r.Client.Get(ctx, req.NamespacedName, &cached); err != nil {
		if apierrors.IsNotFound(err) {
			r.statuses.Forget(req.NamespacedName)
			r.done.Delete(req.NamespacedName)
			if call := r.deletes.forget(req.NamespacedName); call != nil {
				r.recordAfterCancel(ctx, call)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.statuses.Known(&cached, &cached.Status)
	if call, running, ok := r.deletes.pending(&cached); ok {
		if running {
			// Its end triggers the Tombstone; the requeue is the safety net for a
			// trigger dropped (plugin.Trigger never blocks).
			return ctrl.Result{RequeueAfter: plugin.CallTimeout}, nil
		}
		return r.recordFinished(ctx, req.NamespacedName, call)
	}
	if !controllerutil.ContainsFinalizer(&cached, limbov1alpha1.FinalizerHardDelete) {
		// Cancelled, or its item deleted: the finalizer went first, so nothing
		// touches the item any more. One still there whose delete failed goes now.
		return r.remove(ctx, &cached)
	}
	if uid, done := r.done.Load(req.NamespacedName); done && uid == cached.UID {
		// The item is gone; the Tombstone goes: again, if a write of that failed
		// (on a stale copy from before the finalizer went, a Conflict: read again).
		return r.remove(ctx, &cached)
	}
	if result, wait, err := r.countdown(ctx, &cached); wait || err != nil {
		return result, err
	}

	if wait := r.waitsAnyway(ctx, &cached); wait > 0 {
		// Its turn, or its Bundle's readiness, is what it waits for: the
		// fresh reads below are for a delete, and made once it may happen.
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	// Due, or forced: decide again on fresh reads.
	var ts limbov1alpha1.Tombstone
	if err := r.Reader.Get(ctx, req.NamespacedName, &ts); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(&ts, limbov1alpha1.FinalizerHardDelete) {
		return ctrl.Result{}, nil
	}
	if result, wait, err := r.countdown(ctx, &ts); wait || err != nil {
		return result, err
	}
	b, why, err := r.owningBundle(ctx, &ts)
	if err != nil {
		return ctrl.Result{}, err // fail closed
	}
	if why != "" {
		if !ts.DeletionTimestamp.IsZero() {
			// Deleted while its cleanup job is gone or going: removing a cleanup
			// job stops its deletions; the item stays, the Tombstone goes.
			return ctrl.Result{}, r.Engine.CancelTombstone(ctx, &ts, &ts, why)
		}
		// The Bundle's pass or teardown cancels it; until then nothing happens.
		return ctrl.Result{RequeueAfter: recheckInterval}, nil
	}
	if ts.DeletionTimestamp.IsZero() && !bundleReady(b) {
		// A half rolled-out Bundle never deletes (DESIGN §3, step 6): its
		// external items wait, as its objects' countdowns do. A forced
		// Tombstone (kubectl delete) does not.
		return ctrl.Result{RequeueAfter: recheckInterval}, nil
	}
	if !r.deletes.reserve(&ts) {
		// Every turn of the backend is taken; it is queued, and a turn that
		// frees wakes it. The requeue is the safety net.
		return ctrl.Result{RequeueAfter: plugin.CallTimeout}, nil
	}

	// The attempt marker: a cancel (finalizer removed) or any other change that
	// lands first makes this a Conflict, and nothing is deleted.
	status := ts.Status.DeepCopy()
	status.Attempts++
	now := r.Clock.Now()
	status.LastAttemptTime = ptrTime(attemptTime(now, &ts))
	// Due now: the deadline it waited for, or, expedited or its delay lowered,
	// the one that has come since.
	status.DeleteAfter = softdelete.Decide(now, softdelete.StateOf(&ts, false)).StatusDeadline()
	if err := r.statuses.Patch(ctx, r.Client, &ts, &ts.Status, status, client.MergeFromWithOptimisticLock{}); err != nil {
		r.deletes.release(&ts)
		if apiconflict.Is(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil // read and decide again
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	item := ts.DeepCopy() // the delete may outlive this reconcile
	finished, err := r.deletes.start(ctx, &ts, status.Attempts, func(ctx context.Context) error { return r.deleteItem(ctx, item, b) })
	if !finished {
		return ctrl.Result{RequeueAfter: plugin.CallTimeout}, nil // its end triggers the Tombstone; the requeue is the safety net
	}
	return r.record(ctx, &ts, status.Attempts, err)
}

// recordFinished records a delete that finished in the background on a fresh
// read of its Tombstone. A Tombstone cancelled meanwhile (gone, its finalizer
// removed, or made again since) is left as it is: recordAfterCancel.
func (r *Reconciler) recordFinished(ctx context.Context, key client.ObjectKey, call *deleteCall) (ctrl.Result, error) {
	var ts limbov1alpha1.Tombstone
	if err := r.Reader.Get(ctx, key, &ts); client.IgnoreNotFound(err) != nil {
		// The retry finds no finished delete: a Tombstone still due sends it
		// again (an item gone is success), one cancelled sends nothing — only
		// the Warning of a cancel that came too late is lost.
		return ctrl.Result{}, err
	} else if err == nil && ts.UID == call.uid && controllerutil.ContainsFinalizer(&ts, limbov1alpha1.FinalizerHardDelete) {
		return r.record(ctx, &ts, call.attempt, call.err)
	}
	r.recordAfterCancel(ctx, call)
	return ctrl.Result{}, nil
}

// recordAfterCancel records a delete that finished after its Tombstone was
// cancelled: the cancel landed after the attempt marker, and a delete sent
// cannot be called back. One that succeeded deleted the item all the same,
// which the audit trail says beside the "cancelled" of the cancel (a Warning
// on the Tombstone, the deletion counted and logged); one that failed deleted
// nothing, and the item stays as the cancel wanted.
func (r *Reconciler) recordAfterCancel(ctx context.Context, call *deleteCall) {
	if call.err != nil {
		log.FromContext(ctx).V(1).Info("a delete whose Tombstone was cancelled meanwhile failed: the item stays", "error", call.err.Error())
		return
	}
	ts := call.tombstone
	d := softdelete.Decide(r.Clock.Now(), softdelete.StateOf(ts, false))
	r.Engine.RecordDeletion(time.Time{}) // no countdown of its ended: it was cancelled
	r.Recorder.Eventf(ts, corev1.EventTypeWarning, limbov1alpha1.EventDeleted,
		"%s %q deleted: its deletion was cancelled while the delete ran, too late to call it back", ts.Spec.Item.Kind, ts.Spec.Item.ID)
	softdelete.AuditTombstone(ctx, "deleted", ts, d.Deadline, "cancelledWhileDeleting", true)
}

// record records the outcome of ts's delete attempt number attempt: a failure
// in status and an event, retried after the backoff; a success in the metrics,
// the log and an event, and the Tombstone goes (a forced one is already
// being deleted: its finalizer goes).
func (r *Reconciler) record(ctx context.Context, ts *limbov1alpha1.Tombstone, attempt int32, err error) (ctrl.Result, error) {
	if errors.Is(err, plugin.ErrNotResponsible) {
		// The resource's spec no longer covers the item (narrowed since the
		// countdown began), or the item is desired again: retrying cannot
		// succeed, and the Bundle's pass cancels neither a Tombstone it no
		// longer lists nor a forced one. The item stays as it is. This
		// attempt deleted nothing (a plugin refuses before it calls its
		// backend); the cancel says only what the earlier ones may have done.
		answered := ts.DeepCopy()
		answered.Status.Attempts = attempt - 1
		return ctrl.Result{}, r.Engine.CancelTombstone(ctx, answered, answered, err.Error())
	}
	if err != nil {
		// Bounded: the error may carry what an endpoint answered, and the
		// Bundle's status repeats every Tombstone's.
		msg := bundlespec.Bound(err.Error())
		status := ts.Status.DeepCopy()
		status.LastError = msg
		backoff := retryBackoff(attempt)
		r.Recorder.Eventf(ts, corev1.EventTypeWarning, limbov1alpha1.EventDeleteFailed, "delete %s %q (attempt %d, next in %v): %s", ts.Spec.Item.Kind, ts.Spec.Item.ID, attempt, backoff, msg)
		r.Engine.RecordFailure()
		if err := r.writeStatus(ctx, ts, status); err != nil {
			// Logged, not returned: controller-runtime drops the requeue of a
			// reconcile that fails and retries within milliseconds, which
			// would send the delete again at once, its backoff lost.
			log.FromContext(ctx).Error(err, "record a failed delete in the Tombstone's status", "attempt", attempt)
		}
		return ctrl.Result{RequeueAfter: backoff}, nil
	}
	r.done.Store(client.ObjectKeyFromObject(ts), ts.UID)
	forced := !ts.DeletionTimestamp.IsZero()
	d := softdelete.Decide(r.Clock.Now(), softdelete.StateOf(ts, false))
	deadline := d.Deadline
	if forced {
		deadline = time.Time{} // forced by the user: no countdown ended
	}
	r.Engine.RecordDeletion(deadline)
	r.Recorder.Eventf(ts, corev1.EventTypeNormal, limbov1alpha1.EventDeleted, "%s %q deleted", ts.Spec.Item.Kind, ts.Spec.Item.ID)
	softdelete.AuditTombstone(ctx, "deleted", ts, d.Deadline)
	return r.remove(ctx, ts)
}

// remove removes ts, whose item is deleted or no longer to be
// (softdelete.RemoveTombstone). An error is returned, and the retry (done
// remembers an item that is gone) does what is left; a Conflict, ts changed since
// it was read, is read and decide again.
func (r *Reconciler) remove(ctx context.Context, ts *limbov1alpha1.Tombstone) (ctrl.Result, error) {
	err := softdelete.RemoveTombstone(ctx, r.Client, ts)
	if apiconflict.Is(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

const (
	// recheckInterval paces a Tombstone that waits for its Bundle's pass or
	// teardown, or for every resource of its Bundle to be Ready.
	recheckInterval = 5 * time.Second
	// conflictRetry is how soon a Tombstone whose write met a Conflict is read and
	// decided again.
	conflictRetry = 100 * time.Millisecond
)

// countdown handles a Tombstone that is not due: it stamps one that has no
// (valid) stamp, reports an invalid delay, or waits, for its deadline or for the
// backoff of its last failed delete (backoffLeft). wait is false when the
// Tombstone is due or forced, and not backing off.
func (r *Reconciler) countdown(ctx context.Context, ts *limbov1alpha1.Tombstone) (ctrl.Result, bool, error) {
	now := r.Clock.Now()
	backoff := func() (ctrl.Result, bool, error) {
		wait := backoffLeft(now, ts)
		return ctrl.Result{RequeueAfter: wait}, wait > 0, nil
	}
	if !ts.DeletionTimestamp.IsZero() {
		return backoff()
	}
	d := softdelete.Decide(now, softdelete.StateOf(ts, false))
	status := ts.Status.DeepCopy()
	status.DeleteAfter = d.StatusDeadline()
	switch d.Action {
	case softdelete.ActionDelete:
		return backoff()
	case softdelete.ActionStamp, softdelete.ActionRestamp:
		// The annotation's change brings the next reconcile, which waits.
		conflict, err := r.Engine.StampTombstone(ctx, ts, d)
		if conflict {
			return ctrl.Result{RequeueAfter: conflictRetry}, true, nil
		}
		return ctrl.Result{}, true, client.IgnoreNotFound(err)
	case softdelete.ActionInvalid:
		r.Recorder.Eventf(ts, corev1.EventTypeWarning, limbov1alpha1.ReasonInvalidDeletionDelay, "never deleted: %v", d.Err)
		return ctrl.Result{}, true, r.writeStatus(ctx, ts, status)
	default: // Wait
		return ctrl.Result{RequeueAfter: d.RequeueAfter}, true, r.writeStatus(ctx, ts, status)
	}
}

// owningBundle reads ts's Bundle from the API server. why says why the Bundle
// may not have the item deleted now: its namespace is being deleted, it is gone,
// being torn down, not ts's owner, or no longer declares ts's plugin resource. A
// read error is returned: the caller does nothing (fail closed).
//
// The namespace comes first: the namespace controller deletes each kind of a
// terminating namespace in turn, in no set order, and a Tombstone it deleted
// while the Bundle is not yet being deleted would look forced (kubectl delete
// tombstone) — the cleanup job's pending deletes run at once instead of being
// cancelled with it.
func (r *Reconciler) owningBundle(ctx context.Context, ts *limbov1alpha1.Tombstone) (*limbov1alpha1.Bundle, string, error) {
	// Uninstalling limbo deletes its CRDs, which delete every Tombstone and
	// Bundle in background: the Tombstone's deletion is no user's force, and
	// its Bundle may not be deleted yet (the API server deletes them one
	// namespace after the other).
	switch crd, err := uninstall.Going(ctx, r.Reader, uninstall.TombstonesCRD, uninstall.BundlesCRD); {
	case err != nil:
		return nil, "", err
	case crd != "":
		return nil, "limbo is being uninstalled: its CRD " + crd + " is being deleted", nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	switch err := r.Reader.Get(ctx, client.ObjectKey{Name: ts.Namespace}, ns); {
	case apierrors.IsNotFound(err):
		return nil, "its namespace is gone", nil
	case err != nil:
		return nil, "", fmt.Errorf("read the Tombstone's namespace: %w", err)
	case !ns.DeletionTimestamp.IsZero():
		return nil, "its namespace is being deleted", nil
	}
	var b limbov1alpha1.Bundle
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ts.Namespace, Name: ts.Labels[limbov1alpha1.LabelBundle]}, &b)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "its Bundle is gone", nil
	case err != nil:
		return nil, "", fmt.Errorf("read the Tombstone's Bundle: %w", err)
	case !b.DeletionTimestamp.IsZero():
		return nil, "its Bundle is being deleted", nil
	case !ownedBy(ts, &b):
		return nil, "its Bundle was replaced", nil
	}
	if res := b.PluginResource(ts.Spec.Resource); res != nil && res.Plugin.Name == ts.Spec.Plugin {
		return &b, "", nil
	}
	return nil, fmt.Sprintf("resource %q left the Bundle", ts.Spec.Resource), nil
}

// deleteItem asks the Tombstone's plugin to delete its item, with the plugin
// resource's spec from the owning Bundle b. It runs beside the worker, under
// plugin.CallTimeout.
func (r *Reconciler) deleteItem(ctx context.Context, ts *limbov1alpha1.Tombstone, b *limbov1alpha1.Bundle) error {
	p, ok := r.Plugins.Get(ts.Spec.Plugin)
	if !ok {
		return r.Plugins.UnknownPlugin(ts.Spec.Plugin)
	}
	deleter, ok := p.(plugin.ExternalDeleter)
	if !ok {
		return fmt.Errorf("plugin %q cannot delete external items", ts.Spec.Plugin)
	}
	spec, err := plugin.ResolveSpecFromStatus(ctx, r.Reader, b, ts.Spec.Resource)
	if err != nil {
		return fmt.Errorf("plugin spec: %w", err)
	}
	// As in the Bundle's passes, the plugin acts with the rights of the Bundle's
	// ServiceAccount, where it has one: its credentials are read as it.
	ctx = impersonation.WithServiceAccount(ctx, b.Namespace, impersonation.ServiceAccountOf(b, r.DefaultServiceAccount))
	secrets, err := impersonation.SecretReader(ctx, r.Client, r.Reader)
	if err != nil {
		return err
	}
	req := plugin.Request{Bundle: b, Resource: ts.Spec.Resource, Spec: spec, Client: r.pluginClient(), Reader: r.Reader, Secrets: secrets, Now: r.Clock.Now()}
	return deleter.DeleteExternal(ctx, req, ts.Spec.Item)
}

// bundleReady tells whether b's last pass, of its current spec, found every
// resource Ready: the gate of its orphans' deletions, which its Tombstones'
// deletes go through too. A status behind the spec (a pass yet to run, or whose
// status write failed) is not Ready.
// waitsAnyway is how long ts, due and not forced, waits whatever its fresh
// reads say (0: it does not): every turn of its plugin resource is taken (it
// is queued, a turn that frees wakes it, the requeue is the safety net), or its
// Bundle as the cache shows it is not Ready (rechecked). Thousands of due Tombstones queued behind
// one turn read themselves, two CRDs, their namespace and their whole Bundle
// from the API server at every requeue: hundreds of reads a second, the
// workers busy with nothing else. Waiting deletes nothing, so a cache behind
// the API server only delays; what may delete is decided on fresh reads.
func (r *Reconciler) waitsAnyway(ctx context.Context, ts *limbov1alpha1.Tombstone) time.Duration {
	if !ts.DeletionTimestamp.IsZero() {
		// Forced: no Bundle holds it, and its fresh reads may cancel it at
		// once (its namespace, its Bundle or limbo's CRDs going) rather than
		// after a turn.
		return 0
	}
	if r.deletes.busy(ts) {
		return plugin.CallTimeout
	}
	var b limbov1alpha1.Bundle
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ts.Namespace, Name: ts.Labels[limbov1alpha1.LabelBundle]}, &b)
	if err == nil && b.DeletionTimestamp.IsZero() && ownedBy(ts, &b) && !bundleReady(&b) {
		return recheckInterval
	}
	return 0
}

func bundleReady(b *limbov1alpha1.Bundle) bool {
	if b.Status.ObservedGeneration != b.Generation {
		return false
	}
	for _, st := range b.Status.Resources {
		if st.State != limbov1alpha1.ResourceReady {
			return false
		}
	}
	return true
}

func ownedBy(ts *limbov1alpha1.Tombstone, b *limbov1alpha1.Bundle) bool {
	for _, ref := range ts.OwnerReferences {
		if ref.UID == b.UID {
			return true
		}
	}
	return false
}

func (r *Reconciler) writeStatus(ctx context.Context, ts *limbov1alpha1.Tombstone, status *limbov1alpha1.TombstoneStatus) error {
	return client.IgnoreNotFound(r.statuses.Patch(ctx, r.Client, ts, &ts.Status, status))
}

func ptrTime(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

// pluginClient is the client of the plugins' requests.
func (r *Reconciler) pluginClient() client.Client {
	if r.PluginClient != nil {
		return r.PluginClient
	}
	return r.Client
}
