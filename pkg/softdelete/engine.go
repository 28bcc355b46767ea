package softdelete

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/invalidcauses"
	"github.com/limbo-dev/limbo/pkg/shard"
)

// Engine applies the state machine's decisions to Kubernetes objects: it stamps,
// cancels and deletes. It holds no deletion logic of its own: Decide decides.
type Engine struct {
	Client client.Client
	// Reader reads from the API server. A delete is decided again on a fresh read:
	// a cached or listed copy may predate a cancel, a raised delay or an adoption.
	Reader   client.Reader
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *Metrics
	// Shard's label keys are copied from a Bundle onto the Tombstones it creates
	// (nil: a single controller, nothing to copy).
	Shard *shard.Selector

	// deleted are the UIDs of the objects the engine deleted lately. A pass
	// deciding on a cache that has not seen such a delete yet finds the
	// object gone on its fresh read: that is the same deletion, not one more
	// object found gone — one count in limbo_deletions_total per deletion.
	deleted recentSet[types.UID]
	// ownersThere are the Bundles that owners of object items named lately
	// and that existed then (ownerGone): a sibling's items seen at every pass
	// cost a read of it a minute, not one a pass.
	ownersThere recentSet[client.ObjectKey]
}

// recentSet holds what was added in the last recentMemory (up to twice that):
// two generations, the current one and the one before, turned over every
// recentMemory, so that an add costs the same during a mass deletion as at
// rest.
type recentSet[K comparable] struct {
	mu                sync.Mutex
	current, previous map[K]bool
	since             time.Time // when current began
}

// recentMemory is far longer than a cache lags behind a delete.
const recentMemory = time.Minute

func (r *recentSet[K]) add(k K, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil || now.Sub(r.since) > recentMemory {
		r.previous, r.current, r.since = r.current, map[K]bool{}, now
	}
	r.current[k] = true
}

// has reports whether k was added lately, as of now: a set not added to for
// twice recentMemory has forgotten everything.
func (r *recentSet[K]) has(k K, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.since) > 2*recentMemory {
		return false
	}
	return r.current[k] || r.previous[k]
}

// recordGone counts an object found gone when about to delete it, unless this
// engine deleted it (a decision on a copy older than its own delete).
func (e *Engine) recordGone(uid types.UID) {
	if !e.deleted.has(uid, e.Clock.Now()) {
		e.Metrics.deletions.WithLabelValues(ResultGone).Inc()
	}
}

// Outcome is what processing one orphan did.
type Outcome struct {
	Decision Decision
	// Gone reports that the object no longer exists (deleted now, or already).
	Gone bool
	// Pending is the object's entry for status.pendingDeletions while it exists
	// and is still the caller's; nil when it is gone or no longer the caller's.
	Pending *limbov1alpha1.PendingDeletion
	// WakeAt is when the caller must come back (the end of a countdown): an
	// instant, not a wait, so that the time the caller spends on other objects
	// before it starts waiting does not make the deadline late. Zero: no need.
	WakeAt time.Time
	// ReadAgain reports that the object changed since it was read, or that its
	// claim could not be judged yet: the caller reads it and decides again soon.
	ReadAgain bool
	// Held reports that the object was due and its claim held it (ClaimHeld):
	// not deleted, and no entry; the caller lists it with the hold's reason.
	Held bool
	// Err is a failed read or write; the caller retries.
	Err error
}

// Claim judges fresh, a copy of an orphan read from the API server just before
// its delete: is it still the caller's to delete, now? A Bundle's pass claims
// what the Bundle still controls (ControlledBy) as long as the Bundle has not
// changed since the pass decided; the reaper claims what is still released
// (ClaimReleased). An object cancelled or adopted a moment ago is not deleted.
// A ClaimDeferred that a failure caused (a read or a write of the claim's that
// failed) comes with that error: the orphan's pendingDeletions entry says it, and
// the caller retries as for any failure; a deferral that is no failure (the
// Bundle changed) comes with nil.
type Claim func(fresh metav1.Object) (ClaimVerdict, error)

// ClaimVerdict is a Claim's answer.
type ClaimVerdict int

const (
	// Claimed: still the caller's and due; deleted.
	Claimed ClaimVerdict = iota
	// NotClaimed: no longer the caller's; left alone and no longer listed.
	NotClaimed
	// ClaimDeferred: still the caller's, but its owner changed since the caller
	// decided (or could not be read again): not deleted now, still listed, and
	// decided again at once.
	ClaimDeferred
	// ClaimHeld: still the caller's and due, but the caller may not delete now
	// (a Bundle's readiness gate): not deleted, and the Outcome says Held, so
	// that the caller lists it with its own reason and comes back when the hold
	// ends. Unlike NotClaimed, it is still the caller's.
	ClaimHeld
)

// msgDeferred is the pendingDeletions message of an orphan whose delete a
// ClaimDeferred held back: the Bundle changed since the pass decided, or the
// object changed while it was handed over (a Release Conflict).
const msgDeferred = "not deleted yet: it or its Bundle changed just before the delete; deciding again"

// ControlledBy claims objects whose controller is the owner with uid.
func ControlledBy(uid types.UID) Claim {
	return func(fresh metav1.Object) (ClaimVerdict, error) {
		if owner := metav1.GetControllerOf(fresh); owner != nil && owner.UID == uid {
			return Claimed, nil
		}
		return NotClaimed, nil
	}
}

// ClaimReleased claims the objects that are Released: the reaper's.
func ClaimReleased(fresh metav1.Object) (ClaimVerdict, error) {
	if Released(fresh) {
		return Claimed, nil
	}
	return NotClaimed, nil
}

// Released reports whether obj was released to limbo (a Bundle's teardown, or a
// hand-over to an adopter: see Release) and is the reaper's: it carries the
// limbo.dev/bundle label and the limbo.dev/released mark that only Release
// writes, and no controller. Plugin items (never labelled with a Bundle), objects that
// `kubectl limbo cancel` took out of limbo (mark and label gone) and objects the
// garbage collector orphaned (--cascade=orphan: no mark) are not. An object
// released with an invalid delay has no stamp yet: the reaper stamps it once the
// delay is fixed. Nor is one whose label names no Bundle that can exist (empty,
// or no object name: never written by limbo): no Bundle of its name can be read
// to decide its holds, and bad marks never delete.
func Released(obj metav1.Object) bool {
	bundle, labelled := obj.GetLabels()[limbov1alpha1.LabelBundle]
	_, released := obj.GetAnnotations()[limbov1alpha1.AnnotationReleased]
	return labelled && released && metav1.GetControllerOf(obj) == nil && len(validation.IsDNS1123Subdomain(bundle)) == 0
}

// Orphan runs the state machine for obj, an object that is no longer desired, and
// applies its decision. Events go to eventTarget (the Bundle, or the object itself
// when no Bundle is left). A delete is decided again on a fresh read, which claim
// must accept; it carries UID and resourceVersion preconditions.
func (e *Engine) Orphan(ctx context.Context, eventTarget runtime.Object, obj client.Object, claim Claim) Outcome {
	return e.OrphanAt(ctx, eventTarget, obj, claim, e.Clock.Now())
}

// OrphanAt is Orphan deciding at now, the instant the caller judged what might
// hold obj: a deadline that falls between that judgement and a later reading of
// the clock would otherwise find obj due without the caller's check of it.
func (e *Engine) OrphanAt(ctx context.Context, eventTarget runtime.Object, obj client.Object, claim Claim, now time.Time) Outcome {
	if obj.GetDeletionTimestamp() != nil {
		return Outcome{Pending: terminatingEntry(obj)}
	}
	return e.act(ctx, eventTarget, obj, claim, now, Decide(now, StateOf(obj, false)), false)
}

// act applies decision d about obj. fresh reports that obj was just read from the
// API server (so a Delete needs no second read).
func (e *Engine) act(ctx context.Context, eventTarget runtime.Object, obj client.Object, claim Claim, now time.Time, d Decision, fresh bool) Outcome {
	out := Outcome{Decision: d}
	switch d.Action {
	case ActionStamp, ActionRestamp:
		out = e.stamp(ctx, eventTarget, e.objectSubject(eventTarget, obj), d, now)
	case ActionWait:
		out.WakeAt = now.Add(d.RequeueAfter)
		out.Err = e.keepPendingLabel(ctx, obj)
	case ActionInvalid:
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.ReasonInvalidDeletionDelay, "%s is never deleted: %v", describe(obj), d.Err)
	case ActionDelete:
		if !fresh {
			return e.decideFresh(ctx, eventTarget, obj, claim, now)
		}
		return e.deleteChecked(ctx, eventTarget, e.objectSubject(eventTarget, obj), d)
	}
	out.Pending = pendingEntry(obj, d, out.Err)
	return out
}

// keepPendingLabel puts the pending-deletion label back on obj, an orphan whose
// countdown runs, when another writer removed it (a GitOps tool that owns the
// object's labels, a kubectl label): the stamp still counts, but kubectl limbo
// pending lists by the label, and the reaper, once a teardown releases obj,
// finds it by the label alone. The write is guarded by obj's resourceVersion:
// a concurrent change (or obj gone) is decided on the next read.
func (e *Engine) keepPendingLabel(ctx context.Context, obj client.Object) error {
	if obj.GetLabels()[limbov1alpha1.LabelPendingDeletion] == "true" { // as the reaper and pending select it
		return nil
	}
	err := patchWith(ctx, e.Client, obj, map[string]any{"metadata": map[string]any{
		"labels":          map[string]any{limbov1alpha1.LabelPendingDeletion: "true"},
		"resourceVersion": obj.GetResourceVersion(),
	}})
	switch {
	case apiconflict.Is(err), apierrors.IsNotFound(err):
		return nil
	case errors.Is(err, ErrMarksNotKept):
		// A policy that drops limbo's labels: the countdown runs all the same
		// (the stamp counts), and failing every pass of its days would only
		// retry what the policy undoes.
		log.FromContext(ctx).V(1).Info("could not put back the pending-deletion label of an object in limbo", "object", describe(obj), "error", err.Error())
		return nil
	case err == nil:
		log.FromContext(ctx).Info("put back the pending-deletion label another writer removed from an object in limbo", "object", describe(obj))
	}
	return err
}

// subject is an orphan as the engine writes to it and reports about it: an
// object, a plugin's object item or a Tombstone. Its fields are all that differs
// between them, so that stamping (stampAndAnnounce), deleting (deleteChecked) and
// cancelling (cancel) are written once for all three.
type subject struct {
	obj client.Object
	// client writes obj: the engine's, or the client of the cluster that a
	// plugin's item lives in.
	client client.Client
	// reader reads obj back from its API server, not a cache: the engine's
	// Reader, or the client of the cluster that a plugin's item lives in.
	reader client.Reader
	// ref names obj in events and messages.
	ref string
	// stampAnnotations are written with the stamp: what a plugin's item needs to
	// be recognised as in limbo (its delay and owner), which an object has already.
	stampAnnotations map[string]any
	// audit writes obj's line of the audit trail.
	audit func(ctx context.Context, msg string, deadline time.Time, extra ...any)
}

// objectSubject is obj, one of the engine's own cluster that a Bundle owned.
func (e *Engine) objectSubject(eventTarget runtime.Object, obj client.Object) subject {
	return subject{obj: obj, client: e.Client, reader: e.Reader, ref: describe(obj),
		audit: func(ctx context.Context, msg string, deadline time.Time, extra ...any) {
			auditLog(ctx, eventTarget, obj, msg, deadline, extra...)
		}}
}

// stamp starts s's countdown (stampAndAnnounce), decided at now, and says when
// to come back: at the deadline's requeue; at once to read again after a
// Conflict.
func (e *Engine) stamp(ctx context.Context, eventTarget runtime.Object, s subject, d Decision, now time.Time) Outcome {
	out := Outcome{Decision: d}
	conflict, err := e.stampAndAnnounce(ctx, eventTarget, s, d)
	switch {
	case err != nil:
		out.Err = err
	case conflict:
		out.ReadAgain = true
	default:
		out.WakeAt = now.Add(d.RequeueAfter)
	}
	return out
}

// stampAndAnnounce starts s's countdown as d (a Stamp or Restamp) says: the stamp
// and the pending-deletion label, on the object as read, then the event and the
// audit line. The write carries the resourceVersion read: a concurrent change (a
// re-add, an edited delay) makes it a Conflict, reported as conflict and not as
// an error, since it means "read and decide again" (DESIGN.md §4); so does an
// object deleted meanwhile (NotFound).
func (e *Engine) stampAndAnnounce(ctx context.Context, eventTarget runtime.Object, s subject, d Decision) (conflict bool, err error) {
	if d.Action == ActionRestamp {
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.EventInvalidStamp, "%s: %v", s.ref, d.Err)
	}
	annotations := map[string]any{limbov1alpha1.AnnotationDeletionTimestamp: FormatStamp(d.Stamp)}
	maps.Copy(annotations, s.stampAnnotations)
	err = patchWith(ctx, s.client, s.obj, map[string]any{"metadata": map[string]any{
		"annotations":     annotations,
		"labels":          map[string]any{limbov1alpha1.LabelPendingDeletion: "true"},
		"resourceVersion": s.obj.GetResourceVersion(),
	}})
	stamp := FormatStamp(d.Stamp)
	switch {
	case apiconflict.Is(err), apierrors.IsNotFound(err):
		// NotFound: deleted by someone else since it was read, which the next
		// read shows; no failure.
		return true, nil
	case err != nil && writeTookEffect(ctx, s.reader, s.obj, err, func(m metav1.Object) bool {
		_, labelled := m.GetLabels()[limbov1alpha1.LabelPendingDeletion]
		return labelled && m.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == stamp
	}):
		// Made, its answer lost: the countdown runs, and is announced.
		log.FromContext(ctx).Info("the answer to a stamp was lost; a read showed it took effect", "object", s.ref, "error", err.Error())
		err = nil
	case errors.Is(err, ErrMarksNotKept) && s.obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == stamp:
		// The stamp landed (a policy dropped another mark): the countdown
		// runs, and is announced, failing all the same.
	case err != nil:
		return false, err
	}
	e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionScheduled,
		"%s is in limbo for %v: deleted at %s", s.ref, d.Delay, d.Deadline.UTC().Format(time.RFC3339))
	s.audit(ctx, "stamped", d.Deadline)
	return false, err
}

// decideFresh reads obj from the API server and decides again on what it reads:
// only an object that is still the same object (UID), still the caller's (claim)
// and still due is deleted.
func (e *Engine) decideFresh(ctx context.Context, eventTarget runtime.Object, obj client.Object, claim Claim, now time.Time) Outcome {
	current, gone, err := readAgain(ctx, e.Reader, obj)
	switch {
	case err != nil:
		err = fmt.Errorf("read %s before deleting it: %w", describe(obj), err)
		return Outcome{Err: err, Pending: pendingEntry(obj, Decision{}, err)}
	case gone:
		e.recordGone(obj.GetUID())
		return Outcome{Gone: true}
	}
	verdict, claimErr := Claimed, error(nil)
	if claim != nil {
		verdict, claimErr = claim(current)
	}
	switch {
	case verdict == ClaimDeferred && claimErr != nil:
		return Outcome{Pending: e.Pending(current, "not deleted: "+claimErr.Error()), Err: claimErr}
	case verdict == NotClaimed:
		log.FromContext(ctx).V(1).Info("not deleted: no longer an orphan of this owner", "object", describeGVK(obj), "uid", string(obj.GetUID()))
		return Outcome{}
	case verdict == ClaimHeld:
		log.FromContext(ctx).V(1).Info("not deleted: due, and held by its owner", "object", describeGVK(obj), "uid", string(obj.GetUID()))
		return Outcome{Held: true}
	case verdict == ClaimDeferred:
		// Still the caller's and in limbo: it stays listed, which is also how a
		// Bundle's status goes on naming its kind for a teardown.
		return Outcome{Pending: e.Pending(current, msgDeferred), ReadAgain: true}
	case current.GetDeletionTimestamp() != nil:
		return Outcome{Pending: terminatingEntry(current)}
	}
	return e.act(ctx, eventTarget, current, claim, now, Decide(now, StateOf(current, false)), true)
}

// deleteChecked deletes s's object, just read, with UID and resourceVersion
// preconditions: a re-created object of the same name survives, and one changed
// since it was read is decided again, never deleted on a stale copy. One held by
// finalizers is listed, terminating, until it is really gone; it is not deleted
// again.
func (e *Engine) deleteChecked(ctx context.Context, eventTarget runtime.Object, s subject, d Decision) Outcome {
	obj := s.obj
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := s.client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if out, ok := e.goneOrChanged(err, obj, d); ok {
		return out
	}
	var lost error // the error of a delete that took effect all the same
	if err != nil && answerLost(err) && deleteTookEffect(ctx, s.reader, obj) {
		lost, err = err, nil
	}
	out := Outcome{Decision: d}
	if err != nil {
		e.RecordFailure()
		out.Err = fmt.Errorf("delete %s: %w", s.ref, err)
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.EventDeleteFailed, "%s: %v", s.ref, out.Err)
		out.Pending = pendingEntry(obj, d, out.Err)
		return out
	}
	now := e.Clock.Now()
	e.RecordDeletion(d.Deadline)
	e.deleted.add(uid, now)
	if lost != nil {
		e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeleted,
			"%s deleted (the answer to its delete was lost, %v; a read showed it took effect)", s.ref, lost)
	} else {
		e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeleted, "%s deleted", s.ref)
	}
	s.audit(ctx, "deleted", d.Deadline)
	if len(obj.GetFinalizers()) == 0 {
		out.Gone = true
		return out
	}
	held := obj.DeepCopyObject().(client.Object)
	held.SetDeletionTimestamp(&metav1.Time{Time: now})
	out.Pending = terminatingEntry(held)
	return out
}

// answerLost reports whether err, from a write, may hide one the API server
// made: a timeout, a connection cut, a server error. An answer that refused the
// request (Forbidden, Invalid, 429 — the API server's own words on it) did not
// write; read back, an object someone else deleted meanwhile would turn the
// refusal into a Deleted.
func answerLost(err error) bool {
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err),
		apierrors.IsTooManyRequests(err), apierrors.IsRequestEntityTooLargeError(err):
		return false
	}
	return true
}

// writeTookEffect tells, by a read from obj's API server through reader,
// whether a write of obj that failed with err took effect all the same: its
// answer lost (answerLost), and obj, still the same object, now as made
// says. Announced as failed, a stamp or a cancel that was made left the
// events without its DeletionScheduled or DeletionCancelled, and the next pass
// found the countdown running, or gone, without a word. A failed read tells
// nothing: the write failed, as far as anyone knows.
func writeTookEffect(ctx context.Context, reader client.Reader, obj client.Object, err error, made func(metav1.Object) bool) bool {
	if errors.Is(err, ErrMarksNotKept) || !answerLost(err) || apiconflict.Is(err) || apierrors.IsNotFound(err) {
		return false
	}
	current, gone, rerr := readAgain(ctx, reader, obj)
	return rerr == nil && !gone && made(current)
}

// deleteTookEffect tells, by a read from obj's API server through reader,
// whether a delete of obj whose answer was lost (answerLost) deleted it all the
// same: obj is gone, another object has its name, or it is terminating (obj,
// just read, was not). A timeout or a connection cut after the API server
// acted loses the answer, not the delete; recorded as DeleteFailed, the object
// then gone, the audit trail would have no Deleted for a deletion limbo made. A
// failed read tells nothing: the delete failed, as far as anyone knows.
func deleteTookEffect(ctx context.Context, reader client.Reader, obj client.Object) bool {
	current, gone, err := readAgain(ctx, reader, obj)
	return err == nil && (gone || current.GetDeletionTimestamp() != nil)
}

// readAgain reads obj's metadata through reader (from its API server): current
// is obj as it is now; gone is true when obj no longer exists — not found, or
// another object has its name (another UID).
func readAgain(ctx context.Context, reader client.Reader, obj client.Object) (current *metav1.PartialObjectMetadata, gone bool, err error) {
	current = &metav1.PartialObjectMetadata{}
	current.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	switch err := reader.Get(ctx, client.ObjectKeyFromObject(obj), current); {
	case apierrors.IsNotFound(err):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	return current, current.GetUID() != obj.GetUID(), nil
}

// goneOrChanged is the outcome of a write on a due orphan that the API server
// refused with NotFound (it is gone: success) or Conflict (it changed since it was
// read: the caller comes back at once, reads and decides again); ok is false for
// any other error, and for none.
func (e *Engine) goneOrChanged(err error, obj client.Object, d Decision) (out Outcome, ok bool) {
	switch {
	case apierrors.IsNotFound(err):
		e.recordGone(obj.GetUID())
		return Outcome{Decision: d, Gone: true}, true
	case apiconflict.Is(err):
		return Outcome{Decision: d, ReadAgain: true, Pending: pendingEntry(obj, d, nil)}, true
	}
	return Outcome{}, false
}

// RecordDeletion counts a deletion the engine (or the Tombstone controller, for
// an external item) made, and its lateness when it ended a countdown.
func (e *Engine) RecordDeletion(deadline time.Time) {
	e.Metrics.deletions.WithLabelValues(ResultDeleted).Inc()
	if !deadline.IsZero() {
		e.Metrics.lateness.Observe(e.Clock.Now().Sub(deadline).Seconds())
	}
}

// RecordFailure counts a failed deletion: of an object, a plugin item, or (by the
// Tombstone controller) an external item.
func (e *Engine) RecordFailure() {
	e.Metrics.deletions.WithLabelValues(ResultFailed).Inc()
}

// Desired takes obj out of limbo if it is in it: the stamp and the label go.
// It reports whether it cancelled a countdown; an object gone meanwhile had none
// left to cancel.
func (e *Engine) Desired(ctx context.Context, eventTarget runtime.Object, obj client.Object) (bool, error) {
	return e.cancelObject(ctx, eventTarget, obj, describe(obj)+" is desired again: deletion cancelled", "desired again")
}

// Release takes obj out of its Bundle's hands and starts its countdown: the
// controller owner reference goes, the bundle label stays (so the reaper finds it
// and a new Bundle of the same name can adopt it), and the object is stamped.
// The owner references that would have the garbage collector delete obj once
// the Bundle's is gone go too (DoomedOwners: the Bundle's other objects, owners
// already gone) — it would delete obj at once, its delay ignored. The
// reaper deletes it at its deadline. A Bundle's teardown releases the objects
// with a delay; a teardown or a pass releases an object that adopter, another
// Bundle, declares to adopt (limbo.dev/adopt), delay or not, due or not: the
// reaper holds it while a Bundle declares it to adopt it and deletes it, once
// due, when none does any more (adopter nil: none). Released to an adopter, obj
// goes into the adopter's shard (its labels under the shard's keys), once a
// controller has passed the adopter: a sharded controller's cache shows only
// its own shard, and an adopter of another shard would neither see obj nor be
// woken by its release — it adopted at its recheck of the objects in its way,
// 30 s later.
//
// Writes made as a Bundle's ServiceAccount (impersonation) release only what that
// ServiceAccount may delete, which a dry-run delete as it tells: the reaper deletes
// as limbo, and a Bundle must not get deleted what its ServiceAccount may not
// delete itself by handing it over. Refused, obj stays the Bundle's, and the
// teardown reports the error as it would a refused delete.
func (e *Engine) Release(ctx context.Context, eventTarget runtime.Object, obj client.Object, owner metav1.Object, adopter *limbov1alpha1.Bundle) error {
	if _, impersonated := impersonation.UserFrom(ctx); impersonated {
		uid := obj.GetUID()
		if err := e.Client.Delete(ctx, obj, client.DryRunAll, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			why := "the dry-run delete that tells whether its Bundle's ServiceAccount may delete it failed"
			if apierrors.IsForbidden(err) {
				why = "its Bundle's ServiceAccount may not delete it"
			}
			err = fmt.Errorf("release %s: %s: %w", describe(obj), why, err)
			e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.EventDeleteFailed, "%s: %v", describe(obj), err)
			return err
		}
	}
	doomed, err := DoomedOwners(ctx, e.Reader, e.Client.RESTMapper(), obj, owner.GetName())
	if err != nil {
		return fmt.Errorf("release %s: %w", describe(obj), err)
	}
	refs := ownerReferencesWithout(obj, func(uid types.UID) bool {
		_, isDoomed := doomed[uid]
		return uid == owner.GetUID() || isDoomed
	})
	d := Decide(e.Clock.Now(), StateOf(obj, false))
	// A release retried after its marks half landed (a policy dropped one)
	// keeps the time it first wrote: the retry rewrites nothing, and its
	// failure wakes no pass.
	released := FormatStamp(e.Clock.Now())
	if at, ok := obj.GetAnnotations()[limbov1alpha1.AnnotationReleased]; ok && at != "" {
		released = at
	}
	annotations := map[string]any{limbov1alpha1.AnnotationReleased: released}
	if d.Action == ActionStamp || d.Action == ActionRestamp {
		annotations[limbov1alpha1.AnnotationDeletionTimestamp] = FormatStamp(d.Stamp)
	}
	labels := map[string]any{limbov1alpha1.LabelPendingDeletion: "true"}
	// The owner references go with the adopter's shard label, if any: the
	// object moves to the adopter's shard released, not still this Bundle's.
	handOver := map[string]any{"ownerReferences": refs}
	if adopter != nil && adopter.Status.ObservedGeneration > 0 {
		// Only into the shard of an adopter some controller has passed: one
		// that none runs (a shard label's typo, a selector's value no
		// controller has) would never adopt obj, and no other shard's cache,
		// nor its reaper, would show it again — in limbo for good, in no
		// Bundle's status. Kept in this shard, the reaper holds it while the
		// adopter declares it, and the adopter, once run, finds it in its way.
		shardLabels := map[string]any{}
		e.Shard.PatchLabels(adopter.Labels, shardLabels)
		if len(shardLabels) > 0 {
			handOver["labels"] = shardLabels
		}
	}
	// Two writes, each guarded by the resourceVersion it decided on: the
	// marks first, kept in the answer or the release fails, and then the
	// owner references (replaced whole). One write that lost its marks to an
	// admission policy (one that drops limbo.dev/ keys a tenant's write adds)
	// left the object owned by nobody and unmarked — the evidence of a
	// --cascade=orphan delete, which ended the teardown deleting nothing
	// more. Between the two, a controlled object with the marks is released
	// again by the next pass, its stamp kept (a teardown does not take such
	// an object for one its spec declares again: declaredInLimbo).
	if err := e.patch(ctx, obj, map[string]any{"metadata": map[string]any{
		"annotations":     annotations,
		"labels":          labels,
		"resourceVersion": obj.GetResourceVersion(),
	}}); err != nil {
		return err
	}
	handOver["resourceVersion"] = obj.GetResourceVersion()
	// A shard label not kept fails the release after the owner references
	// went: released all the same, it is announced, and the error returned.
	handedOver := e.patch(ctx, obj, map[string]any{"metadata": handOver})
	if handedOver != nil && !errors.Is(handedOver, ErrMarksNotKept) {
		return handedOver
	}
	if d.Action == ActionRestamp {
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.EventInvalidStamp, "%s: %v", describe(obj), d.Err)
	}
	switch {
	case d.Action == ActionInvalid:
		// Released all the same (the Bundle goes): the reaper stamps it once the
		// delay is fixed, and never deletes it until then.
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.ReasonInvalidDeletionDelay,
			"%s released to limbo, never deleted until its delay is fixed: %v", describe(obj), d.Err)
	case adopter != nil:
		due := "due"
		if !d.Deadline.IsZero() {
			due = "deadline " + d.Deadline.UTC().Format(time.RFC3339)
		}
		e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionScheduled,
			"%s released to limbo for Bundle %q, which declares it to adopt it: deleted if no Bundle does any more (%s)", describe(obj), adopter.Name, due)
		auditLog(ctx, eventTarget, obj, "released", d.Deadline, "adopter", adopter.Name)
	case !d.Deadline.IsZero():
		e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionScheduled,
			"%s released to limbo for %v: deleted at %s", describe(obj), d.Delay, d.Deadline.UTC().Format(time.RFC3339))
		auditLog(ctx, eventTarget, obj, "stamped", d.Deadline)
	}
	return handedOver
}

// KeptDelayManager is the field manager of KeepDelay's writes. The delay it
// writes is not the Bundle's apply's: when the template drops it later, the
// apply leaves a field another manager owns, and DropKeptDelay removes it.
const KeptDelayManager = "limbo-kept-delay"

// KeepDelay writes delay, the one its Bundle's template declares, on obj, an
// object its Bundle's pass did not apply (its resource Blocked, its apply
// refused): a removal that follows is decided on the live object's delay. A
// Conflict or an object gone is no failure (its change brings the next pass,
// which decides again).
func (e *Engine) KeepDelay(ctx context.Context, obj client.Object, delay string) error {
	err := e.writeKeptDelay(ctx, obj, delay)
	if apiconflict.Is(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		log.FromContext(ctx).Info("wrote the template's deletion delay on an object its resource did not apply",
			"object", describe(obj), "delay", delay)
	}
	return err
}

// DropKeptDelay removes from obj, the answer to an apply of a template that
// declares no delay, a delay KeepDelay wrote (KeptDelayManager owns a field of
// it): server-side apply does not remove a field another manager owns, and the
// delay the template no longer declares stayed for the object's life. done is
// false when it must be tried again: a Conflict (the caller's next apply finds
// the entry again).
func (e *Engine) DropKeptDelay(ctx context.Context, obj client.Object) (done bool, err error) {
	if !slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == KeptDelayManager }) {
		return true, nil
	}
	if _, ok := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; !ok {
		return true, nil
	}
	switch err = e.writeKeptDelay(ctx, obj, nil); {
	case apierrors.IsNotFound(err):
		return true, nil
	case apiconflict.Is(err):
		return false, nil
	}
	return err == nil, err
}

// writeKeptDelay sets obj's limbo.dev/deletionDelay to delay (nil removes it)
// as KeptDelayManager, guarded by obj's resourceVersion. The patch goes
// through a metadata-only copy: obj (a Secret, say) is left as it is, and the
// answer's body never reaches limbo's memory.
func (e *Engine) writeKeptDelay(ctx context.Context, obj client.Object, delay any) error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	meta.SetNamespace(obj.GetNamespace())
	meta.SetName(obj.GetName())
	meta.SetUID(obj.GetUID())
	return patchWith(ctx, e.Client, meta, map[string]any{"metadata": map[string]any{
		"annotations":     map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay},
		"resourceVersion": obj.GetResourceVersion(),
	}}, client.FieldOwner(KeptDelayManager))
}

// Disown removes owner's owner reference from obj, as the garbage collector does
// for a dependent of an owner deleted with --cascade=orphan, and takes obj out of
// limbo if a countdown runs on it: for a dependent the collector missed (created
// within its informer lag), which it would delete once the owner is gone. One
// patch, guarded by obj's resourceVersion: a concurrent change is a Conflict, and
// the caller decides again.
func (e *Engine) Disown(ctx context.Context, eventTarget runtime.Object, obj client.Object, owner metav1.Object, why string) error {
	metadata := map[string]any{"ownerReferences": ownerReferencesWithout(obj, func(uid types.UID) bool { return uid == owner.GetUID() }),
		"resourceVersion": obj.GetResourceVersion()}
	cancelled := e.InLimbo(obj)
	if cancelled {
		maps.Copy(metadata, OutOfLimboPatch())
	}
	if err := e.patch(ctx, obj, map[string]any{"metadata": metadata}); err != nil {
		return client.IgnoreNotFound(err)
	}
	s := e.objectSubject(eventTarget, obj)
	s.audit(ctx, "disowned", time.Time{})
	if cancelled {
		e.cancelled(ctx, eventTarget, s, cancelledBecause(s.ref, why), why)
	}
	return nil
}

// ownerReferencesWithout is obj's owner references but those to the owners
// drop names by UID (an empty list, not nil, when none is left: a merge patch
// replaces the list whole).
func ownerReferencesWithout(obj client.Object, drop func(types.UID) bool) []metav1.OwnerReference {
	refs := []metav1.OwnerReference{}
	for _, ref := range obj.GetOwnerReferences() {
		if !drop(ref.UID) {
			refs = append(refs, ref)
		}
	}
	return refs
}

// InLimbo reports whether a countdown runs on obj that a cancel would stop.
func (e *Engine) InLimbo(obj client.Object) bool {
	return Decide(e.Clock.Now(), StateOf(obj, true)).Action == ActionCancel
}

// The marks of an object in limbo: the stamp, the released mark (left alone, it
// would outlive the countdown) and the pending-deletion label.
var (
	limboAnnotations = []string{limbov1alpha1.AnnotationDeletionTimestamp, limbov1alpha1.AnnotationReleased}
	limboLabels      = []string{limbov1alpha1.LabelPendingDeletion}
)

// limboNotes are annotations that tell of a countdown without marking anything
// in limbo: limbo.dev/expeditedFrom, which kubectl limbo expedite writes and
// the controller never reads, and limbo.dev/pluginResource, the plugin
// resource whose item's countdown it was. A cancel removes them with the
// marks, so that nothing of limbo's is left on the object (a Bundle's object
// a plugin stamped before plugins left Bundles' objects alone kept it after
// its Bundle's cancel, and kubectl limbo cancel then refused it as a plugin's
// item); an object that carries a note alone is not in limbo (HasLimboMark,
// Decide), so a note never causes a write.
var limboNotes = []string{limbov1alpha1.AnnotationExpeditedFrom, limbov1alpha1.AnnotationPluginResource}

// OutOfLimboPatch is the metadata of the JSON merge patch that takes an object
// out of limbo: every limbo mark goes, and every note of the countdown (a null
// for an absent annotation changes nothing). The engine's cancels send it, and
// so does `kubectl limbo cancel`.
func OutOfLimboPatch() map[string]any {
	drop := func(keys ...[]string) map[string]any {
		m := map[string]any{}
		for _, k := range slices.Concat(keys...) {
			m[k] = nil
		}
		return m
	}
	return map[string]any{"annotations": drop(limboAnnotations, limboNotes), "labels": drop(limboLabels)}
}

// HasLimboMark reports whether obj carries any of the marks OutOfLimboPatch
// removes; a note (limbo.dev/expeditedFrom) is no mark.
func HasLimboMark(obj metav1.Object) bool {
	has := func(m map[string]string, keys []string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { _, ok := m[k]; return ok })
	}
	return has(obj.GetAnnotations(), limboAnnotations) || has(obj.GetLabels(), limboLabels)
}

// CancelCountdown takes obj out of limbo without making it desired by anyone:
// for a teardown with --cascade=orphan, which promises that nothing is deleted.
func (e *Engine) CancelCountdown(ctx context.Context, eventTarget runtime.Object, obj client.Object, why string) error {
	_, err := e.cancelObject(ctx, eventTarget, obj, cancelledBecause(describe(obj), why), why)
	return err
}

// cancelObject takes obj out of limbo if a countdown runs on it, announced with
// message, and reports whether it did.
func (e *Engine) cancelObject(ctx context.Context, eventTarget runtime.Object, obj client.Object, message, why string) (bool, error) {
	if !e.InLimbo(obj) {
		return false, nil
	}
	return e.cancel(ctx, eventTarget, e.objectSubject(eventTarget, obj), map[string]any{"metadata": OutOfLimboPatch()}, message, why)
}

// cancel takes s's object out of limbo with patch, a merge patch, and announces it
// with message. It reports whether it cancelled: an object gone meanwhile has no
// countdown left to cancel, which is no error.
func (e *Engine) cancel(ctx context.Context, eventTarget runtime.Object, s subject, patch map[string]any, message, why string) (bool, error) {
	if err := patchWith(ctx, s.client, s.obj, patch); err != nil && !writeTookEffect(ctx, s.reader, s.obj, err, func(m metav1.Object) bool { return !HasLimboMark(m) }) {
		return false, client.IgnoreNotFound(err)
	} else if err != nil {
		log.FromContext(ctx).Info("the answer to a cancel was lost; a read showed it took effect", "object", s.ref, "error", err.Error())
	}
	e.cancelled(ctx, eventTarget, s, message, why)
	return true, nil
}

// cancelled announces a cancel of s's countdown: its event and audit line.
func (e *Engine) cancelled(ctx context.Context, eventTarget runtime.Object, s subject, message, why string) {
	e.Recorder.Event(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionCancelled, message)
	s.audit(ctx, "cancelled", time.Time{}, "why", why)
}

// cancelledBecause is the message of a cancel with a reason: "<ref>: deletion
// cancelled (<why>)".
func cancelledBecause(ref, why string) string {
	return fmt.Sprintf("%s: deletion cancelled (%s)", ref, why)
}

// patch sends a JSON merge patch of obj's metadata.
func (e *Engine) patch(ctx context.Context, obj client.Object, patch map[string]any) error {
	return patchWith(ctx, e.Client, obj, patch)
}

// patchWith sends a JSON merge patch of obj's metadata through c.
func patchWith(ctx context.Context, c client.Client, obj client.Object, patch map[string]any, opts ...client.PatchOption) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", data), opts...); err != nil {
		// The error becomes a pendingDeletions message and, in a teardown, a
		// condition's: one refusal, one text (an object its CRD's schema no
		// longer accepts is refused at every pass).
		return fmt.Errorf("update %s: %w", describe(obj), invalidcauses.Sorted(err))
	}
	if unkept := unkeptMarks(obj, patch); len(unkept) > 0 {
		return fmt.Errorf("update %s: the API server's answer %s: %w", describe(obj), strings.Join(unkept, ", "), ErrMarksNotKept)
	}
	return nil
}

// ErrMarksNotKept is wrapped by the error of a write whose answer does not hold
// the labels and annotations it wrote as written (unkeptMarks). Retrying does
// not clear it: the policy that changes them acts on every write.
var ErrMarksNotKept = errors.New("an admission webhook or policy changed what limbo wrote (it must let limbo.dev/ labels and annotations through)")

// unkeptMarks checks answer, the API server's answer to patch, for the labels
// and annotations patch set (a string) or removed (nil), and says what it does
// not hold as written. An admission webhook or policy that drops or rewrites
// them (one that keeps only the annotations it allows) would otherwise leave,
// unsaid, a countdown that starts anew at every pass and is never deleted
// — its DeletionScheduled naming a deadline no one keeps — or a released
// object the reaper never finds.
func unkeptMarks(answer metav1.Object, patch map[string]any) []string {
	metadata, _ := patch["metadata"].(map[string]any)
	var out []string
	for _, field := range []struct {
		name string
		have map[string]string
	}{{"annotation", answer.GetAnnotations()}, {"label", answer.GetLabels()}} {
		written, _ := metadata[field.name+"s"].(map[string]any)
		for _, key := range slices.Sorted(maps.Keys(written)) {
			value, has := field.have[key]
			switch want, set := written[key].(string); {
			case set && !has:
				out = append(out, fmt.Sprintf("has no %s %s", field.name, key))
			case set && value != want:
				out = append(out, fmt.Sprintf("has %s %s %q, not %q", field.name, key, value, want))
			case !set && written[key] == nil && has:
				out = append(out, fmt.Sprintf("still has %s %s", field.name, key))
			}
		}
	}
	return out
}

// auditLog writes the audit trail of the engine's writes (events expire; logs
// stay) for obj: msg is stamped, cancelled or deleted; the keys are stable. The
// caller's logger may carry the Bundle resource the object belonged to
// ("resource"); extra are further keys and values.
func auditLog(ctx context.Context, eventTarget runtime.Object, obj client.Object, msg string, deadline time.Time, extra ...any) {
	bundle := obj.GetNamespace() + "/" + obj.GetLabels()[limbov1alpha1.LabelBundle]
	if b, ok := eventTarget.(*limbov1alpha1.Bundle); ok {
		bundle = b.Namespace + "/" + b.Name
	}
	audit(ctx, msg, bundle, describeGVK(obj), obj.GetUID(), deadline, extra...)
}

// audit writes one line of the audit trail: every stamp, cancel and deletion,
// of objects, plugin items and Tombstones alike (docs/install.md, "Logs").
func audit(ctx context.Context, msg, bundle, object string, uid types.UID, deadline time.Time, extra ...any) {
	kv := append([]any{"bundle", bundle, "object", object, "uid", string(uid)}, extra...)
	if !deadline.IsZero() {
		kv = append(kv, "deadline", deadline.UTC().Format(time.RFC3339))
	}
	log.FromContext(ctx).Info(msg, kv...)
}

// describeGVK names obj for logs: "v1/ConfigMap ns/name".
func describeGVK(obj client.Object) string {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return fmt.Sprintf("%s/%s %s/%s", gvk.GroupVersion().String(), gvk.Kind, obj.GetNamespace(), obj.GetName())
}

// terminatingEntry is the pendingDeletions entry of an object being deleted:
// it stays listed, saying what holds it, until it is gone.
// An object deleted before it was stamped shows no countdown (none ran).
func terminatingEntry(obj client.Object) *limbov1alpha1.PendingDeletion {
	message := TerminatingMessage(obj)
	p := heldEntry(obj, Decide(obj.GetDeletionTimestamp().Time, StateOf(obj, false)), message)
	p.Message = message // an invalid delay no longer matters
	return p
}

// TerminatingMessage says that obj, which has a deletionTimestamp, is being
// deleted, and which finalizers hold it: the message of its pendingDeletions
// entry, and of its row in kubectl limbo pending, which thus read the same.
func TerminatingMessage(obj metav1.Object) string {
	if f := obj.GetFinalizers(); len(f) > 0 {
		return limbov1alpha1.PendingMessageBeingDeleted + "; held by finalizers: " + strings.Join(f, ", ")
	}
	return limbov1alpha1.PendingMessageBeingDeleted
}

// Due reports whether obj, an orphan, is to be deleted at now (Decide's Delete):
// its countdown ended, or it has no delay.
func Due(now time.Time, obj metav1.Object) bool {
	return Decide(now, StateOf(obj, false)).Action == ActionDelete
}

// StateOf is what Decide reads of obj, an object or a Tombstone: its annotations
// and whether it carries the pending-deletion label. desired says whether it is
// still wanted.
func StateOf(obj metav1.Object, desired bool) State {
	_, labelled := obj.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	return State{Desired: desired, Annotations: obj.GetAnnotations(), PendingLabel: labelled, Created: obj.GetCreationTimestamp().Time}
}

// StatusDeadline is d's deadline as a status field holds it (a
// pendingDeletions entry's deleteAfter, a Tombstone's), nil without one.
// metav1.Time keeps whole seconds, so a deadline with a fraction (a delay of
// "1.5s") is rounded up: a status never shows a deletion before it can come, and
// the status written is the status read back — with the fraction, every pass
// found it changed and wrote it again.
func (d Decision) StatusDeadline() *metav1.Time {
	if d.Deadline.IsZero() {
		return nil
	}
	t := d.Deadline.Truncate(time.Second)
	if t.Before(d.Deadline) {
		t = t.Add(time.Second)
	}
	return &metav1.Time{Time: t}
}

// pendingEntry is obj's line in status.pendingDeletions.
func pendingEntry(obj client.Object, d Decision, err error) *limbov1alpha1.PendingDeletion {
	gvk := obj.GetObjectKind().GroupVersionKind()
	p := &limbov1alpha1.PendingDeletion{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(),
	}
	if !d.Deadline.IsZero() {
		// In whole seconds, as stored: a stamp written by hand with a fraction
		// would make every pass's wanted status unlike the stored one.
		p.DeletionTimestamp = &metav1.Time{Time: d.Stamp.Truncate(time.Second)}
		p.DeleteAfter = d.StatusDeadline()
	}
	switch {
	case err != nil:
		p.Message = err.Error()
	case d.Action == ActionInvalid:
		p.Message = d.Err.Error() + "; never deleted until fixed"
	case d.Action == ActionDelete:
		p.Message = "deleting"
	}
	return p
}

func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = "object"
	}
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName() // cluster-scoped (a plugin's object item)
	}
	return fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
}

// Pending is obj's pendingDeletions entry as things stand, without acting: for an
// orphan whose processing waits (the Bundle is not Ready yet), with message saying
// why.
func (e *Engine) Pending(obj client.Object, message string) *limbov1alpha1.PendingDeletion {
	return heldEntry(obj, Decide(e.Clock.Now(), StateOf(obj, false)), message)
}

// heldEntry is the pendingDeletions entry of an orphan that d decided about and
// that is held (its Bundle not Ready), message saying why. An invalid delay keeps
// its own message: it says what must be fixed, where the hold ends by itself.
func heldEntry(obj client.Object, d Decision, message string) *limbov1alpha1.PendingDeletion {
	p := pendingEntry(obj, d, nil)
	if d.Action == ActionInvalid {
		return p
	}
	if d.Action == ActionStamp || d.Action == ActionRestamp {
		// Not stamped yet: no countdown runs.
		p.DeletionTimestamp, p.DeleteAfter = nil, nil
	}
	p.Message = message
	return p
}
