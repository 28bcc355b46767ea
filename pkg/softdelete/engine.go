package softdelete

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Event reasons of the engine.
const (
	EventDeletionScheduled    = "DeletionScheduled"
	EventDeletionCancelled    = "DeletionCancelled"
	EventDeleted              = "Deleted"
	EventInvalidDeletionDelay = "InvalidDeletionDelay"
	EventInvalidStamp         = "InvalidDeletionTimestamp"
	EventDeleteFailed         = "DeleteFailed"
)

// Engine applies the state machine's decisions to Kubernetes objects: it stamps,
// cancels and deletes. It holds no deletion logic of its own: Decide decides.
type Engine struct {
	Client   client.Client
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *Metrics
}

// Outcome is what processing one orphan did.
type Outcome struct {
	Decision Decision
	// Gone reports that the object no longer exists (deleted now, or already).
	Gone bool
	// Pending is the object's entry for status.pendingDeletions while it exists.
	Pending *limbov1alpha1.PendingDeletion
	// Requeue reports that the caller must come back after RequeueAfter (which may
	// be zero: at once).
	Requeue      bool
	RequeueAfter time.Duration
	// Err is a failed write; the caller retries.
	Err error
}

// Orphan runs the state machine for obj, an object that is no longer desired, and
// applies its decision. Events go to eventTarget (the Bundle, or the object itself
// when no Bundle is left).
func (e *Engine) Orphan(ctx context.Context, eventTarget runtime.Object, obj client.Object) Outcome {
	now := e.Clock.Now()
	d := Decide(now, stateOf(obj, false))
	out := Outcome{Decision: d}
	ref := describe(obj)
	switch d.Action {
	case ActionStamp, ActionRestamp:
		if d.Action == ActionRestamp {
			e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, EventInvalidStamp, "%s: %v", ref, d.Err)
		}
		if out.Err = e.stamp(ctx, obj, d.Stamp); out.Err != nil {
			break
		}
		e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, EventDeletionScheduled,
			"%s is in limbo for %v: deleted at %s", ref, d.Delay, d.Deadline.UTC().Format(time.RFC3339))
		out.Requeue, out.RequeueAfter = true, d.RequeueAfter
	case ActionWait:
		out.Requeue, out.RequeueAfter = true, d.RequeueAfter
	case ActionInvalid:
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, EventInvalidDeletionDelay, "%s is never deleted: %v", ref, d.Err)
	case ActionDelete:
		out.Gone, out.Err = e.delete(ctx, obj, d, now)
		if out.Err != nil {
			e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, EventDeleteFailed, "%s: %v", ref, out.Err)
		} else {
			e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, EventDeleted, "%s deleted", ref)
		}
	}
	if !out.Gone {
		out.Pending = pendingEntry(obj, d, out.Err)
	}
	return out
}

// Desired takes obj out of limbo if it is in it: the stamp and the label go.
// It reports whether it cancelled a countdown.
func (e *Engine) Desired(ctx context.Context, eventTarget runtime.Object, obj client.Object) (bool, error) {
	d := Decide(e.Clock.Now(), stateOf(obj, true))
	if d.Action != ActionCancel {
		return false, nil
	}
	patch := map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{limbov1alpha1.AnnotationDeletionTimestamp: nil},
		"labels":      map[string]any{limbov1alpha1.LabelPendingDeletion: nil},
	}}
	if err := e.patch(ctx, obj, patch); err != nil {
		return false, err
	}
	e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, EventDeletionCancelled, "%s is desired again: deletion cancelled", describe(obj))
	return true, nil
}

// Release takes obj out of its Bundle's hands and starts its countdown, for a
// Bundle's teardown: the controller owner reference goes, the bundle label stays
// (so the reaper finds it and a new Bundle of the same name can adopt it), and the
// object is stamped. The reaper deletes it at its deadline.
func (e *Engine) Release(ctx context.Context, eventTarget runtime.Object, obj client.Object, owner metav1.Object) error {
	var refs []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID != owner.GetUID() {
			refs = append(refs, ref)
		}
	}
	d := Decide(e.Clock.Now(), stateOf(obj, false))
	annotations := map[string]any{}
	if d.Action == ActionStamp || d.Action == ActionRestamp {
		annotations[limbov1alpha1.AnnotationDeletionTimestamp] = FormatStamp(d.Stamp)
	}
	patch := map[string]any{"metadata": map[string]any{
		"ownerReferences": refs,
		"annotations":     annotations,
		"labels":          map[string]any{limbov1alpha1.LabelPendingDeletion: "true"},
		// The owner references are replaced whole: guard against a concurrent change.
		"resourceVersion": obj.GetResourceVersion(),
	}}
	if err := e.patch(ctx, obj, patch); err != nil {
		return err
	}
	if !d.Deadline.IsZero() {
		e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, EventDeletionScheduled,
			"%s released to limbo for %v: deleted at %s", describe(obj), d.Delay, d.Deadline.UTC().Format(time.RFC3339))
	}
	return nil
}

func (e *Engine) stamp(ctx context.Context, obj client.Object, stamp time.Time) error {
	return e.patch(ctx, obj, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{limbov1alpha1.AnnotationDeletionTimestamp: FormatStamp(stamp)},
		"labels":      map[string]any{limbov1alpha1.LabelPendingDeletion: "true"},
		// Stamp only the object we decided about: a concurrent change (a re-add,
		// an edited delay) makes this a Conflict and the next pass decides again.
		"resourceVersion": obj.GetResourceVersion(),
	}})
}

// patch sends a JSON merge patch of obj's metadata.
func (e *Engine) patch(ctx context.Context, obj client.Object, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := e.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", data)); err != nil {
		return fmt.Errorf("update %s: %w", describe(obj), err)
	}
	return nil
}

// delete deletes obj with a UID precondition. NotFound, and a Conflict on the
// UID (the object was re-created), mean the orphan is gone: success.
func (e *Engine) delete(ctx context.Context, obj client.Object, d Decision, now time.Time) (bool, error) {
	uid := obj.GetUID()
	err := e.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil:
		e.Metrics.deletions.WithLabelValues(ResultDeleted).Inc()
		if !d.Deadline.IsZero() {
			e.Metrics.lateness.Observe(e.Clock.Now().Sub(d.Deadline).Seconds())
		}
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		e.Metrics.deletions.WithLabelValues(ResultGone).Inc()
		return true, nil
	default:
		e.Metrics.deletions.WithLabelValues(ResultFailed).Inc()
		return false, fmt.Errorf("delete %s: %w", describe(obj), err)
	}
}

func stateOf(obj client.Object, desired bool) State {
	_, labelled := obj.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	return State{Desired: desired, Annotations: obj.GetAnnotations(), PendingLabel: labelled}
}

// pendingEntry is obj's line in status.pendingDeletions.
func pendingEntry(obj client.Object, d Decision, err error) *limbov1alpha1.PendingDeletion {
	gvk := obj.GetObjectKind().GroupVersionKind()
	p := &limbov1alpha1.PendingDeletion{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(),
	}
	if !d.Deadline.IsZero() {
		p.DeletionTimestamp = &metav1.Time{Time: d.Stamp}
		p.DeleteAfter = &metav1.Time{Time: d.Deadline}
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
	d := Decide(e.Clock.Now(), stateOf(obj, false))
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
