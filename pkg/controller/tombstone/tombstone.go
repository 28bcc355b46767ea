// Package tombstone is the Tombstone controller: it deletes the external item a
// Tombstone stands for when the soft-delete state machine says so (the deadline has
// passed), or at once when the Tombstone is deleted (`kubectl delete tombstone`),
// through the finalizer limbo.dev/hard-delete. Failures are retried with capped
// exponential backoff and recorded in status.attempts and status.lastError.
package tombstone

import (
	"context"
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
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller/bundle"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Backoff of failed external deletes: 1s, 2s, 4s, ... capped.
const (
	baseBackoff = time.Second
	maxBackoff  = 5 * time.Minute
)

// Reconciler reconciles Tombstones.
type Reconciler struct {
	Client   client.Client
	Reader   client.Reader
	Plugins  *plugin.Registry
	Engine   *softdelete.Engine
	Recorder record.EventRecorder
	Clock    clock.PassiveClock

	// done remembers Tombstones whose item this process deleted, so that a stale
	// cached copy (finalizer not yet gone) never deletes the item a second time.
	done sync.Map
}

// SetupWithManager registers the Tombstone controller.
func SetupWithManager(mgr ctrl.Manager, plugins *plugin.Registry, engine *softdelete.Engine, workers int) error {
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Plugins: plugins, Engine: engine,
		Recorder: mgr.GetEventRecorderFor("limbo"), Clock: engine.Clock} //nolint:staticcheck // core/v1 events
	return ctrl.NewControllerManagedBy(mgr).Named("tombstone").For(&limbov1alpha1.Tombstone{}, builder.WithPredicates(notStatusOnly)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).Complete(r)
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

// Reconcile runs the state machine for one Tombstone.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ts limbov1alpha1.Tombstone
	if err := r.Client.Get(ctx, req.NamespacedName, &ts); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(&ts, limbov1alpha1.FinalizerHardDelete) {
		return ctrl.Result{}, nil // cancelled, or already done
	}
	forced := !ts.DeletionTimestamp.IsZero()
	if forced && r.bundleGone(ctx, &ts) {
		// Deleted with its Bundle (the garbage collector, --cascade=foreground):
		// removing a cleanup job stops its deletions; the item stays.
		return ctrl.Result{}, r.Engine.CancelTombstone(ctx, &ts, &ts, "its Bundle is being deleted")
	}
	if _, done := r.done.Load(ts.UID); done {
		// The item is gone; this is a stale copy from before the finalizer went.
		return ctrl.Result{}, nil
	}
	d := softdelete.Decide(r.Clock.Now(), softdelete.State{Annotations: ts.Annotations, PendingLabel: true})
	status := ts.Status.DeepCopy()
	if !d.Deadline.IsZero() {
		status.DeleteAfter = ptrTime(d.Deadline)
	}
	switch {
	case forced || d.Action == softdelete.ActionDelete:
		// below
	case d.Action == softdelete.ActionStamp || d.Action == softdelete.ActionRestamp:
		orig := ts.DeepCopy()
		if ts.Annotations == nil {
			ts.Annotations = map[string]string{}
		}
		ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = softdelete.FormatStamp(d.Stamp)
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, &ts, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
	case d.Action == softdelete.ActionInvalid:
		r.Recorder.Eventf(&ts, corev1.EventTypeWarning, softdelete.EventInvalidDeletionDelay, "never deleted: %v", d.Err)
		return ctrl.Result{}, r.writeStatus(ctx, &ts, status)
	default: // Wait
		return ctrl.Result{RequeueAfter: d.RequeueAfter}, r.writeStatus(ctx, &ts, status)
	}

	if err := r.deleteItem(ctx, &ts); err != nil {
		status.Attempts++
		status.LastError = err.Error()
		backoff := min(baseBackoff<<min(status.Attempts-1, 20), maxBackoff)
		r.Recorder.Eventf(&ts, corev1.EventTypeWarning, softdelete.EventDeleteFailed, "delete %s %q (attempt %d, next in %v): %v", ts.Spec.Item.Kind, ts.Spec.Item.ID, status.Attempts, backoff, err)
		return ctrl.Result{RequeueAfter: backoff}, r.writeStatus(ctx, &ts, status)
	}
	r.done.Store(ts.UID, true)
	r.Recorder.Eventf(&ts, corev1.EventTypeNormal, softdelete.EventDeleted, "%s %q deleted", ts.Spec.Item.Kind, ts.Spec.Item.ID)
	orig := ts.DeepCopy()
	controllerutil.RemoveFinalizer(&ts, limbov1alpha1.FinalizerHardDelete)
	if err := r.Client.Patch(ctx, &ts, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !forced {
		uid := ts.UID
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, &ts, client.Preconditions{UID: &uid}))
	}
	return ctrl.Result{}, nil
}

// deleteItem asks the Tombstone's plugin to delete its item, with the plugin
// resource's spec from the owning Bundle.
func (r *Reconciler) deleteItem(ctx context.Context, ts *limbov1alpha1.Tombstone) error {
	p, ok := r.Plugins.Get(ts.Spec.Plugin)
	if !ok {
		return fmt.Errorf("unknown plugin %q", ts.Spec.Plugin)
	}
	deleter, ok := p.(plugin.ExternalDeleter)
	if !ok {
		return fmt.Errorf("plugin %q cannot delete external items", ts.Spec.Plugin)
	}
	var b limbov1alpha1.Bundle
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ts.Namespace, Name: ts.Labels[limbov1alpha1.LabelBundle]}, &b); err != nil {
		return fmt.Errorf("Bundle %q holds the plugin's configuration: %w", ts.Labels[limbov1alpha1.LabelBundle], err)
	}
	spec, err := bundle.ResolvePluginSpec(ctx, r.Reader, &b, ts.Spec.Resource)
	if err != nil {
		return fmt.Errorf("plugin spec: %w", err)
	}
	req := plugin.Request{Bundle: &b, Resource: ts.Spec.Resource, Spec: spec, Client: r.Client, Reader: r.Reader, Now: r.Clock.Now()}
	_, err = plugin.WithTimeout(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, deleter.DeleteExternal(ctx, req, ts.Spec.Item)
	})
	return err
}

// bundleGone reports whether the Tombstone's Bundle is gone or being deleted (read
// from the API server: the cache may lag behind a foreground deletion).
func (r *Reconciler) bundleGone(ctx context.Context, ts *limbov1alpha1.Tombstone) bool {
	var b limbov1alpha1.Bundle
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ts.Namespace, Name: ts.Labels[limbov1alpha1.LabelBundle]}, &b)
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && (!b.DeletionTimestamp.IsZero() || !ownedBy(ts, &b))
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
	if equality.Semantic.DeepEqual(&ts.Status, status) {
		return nil
	}
	orig := ts.DeepCopy()
	ts.Status = *status
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, ts, client.MergeFrom(orig)))
}

func ptrTime(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
