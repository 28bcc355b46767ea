package bundle

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A Bundle deleted with --cascade=orphan carries the finalizer orphan from the
// moment it is deleted until the garbage collector has orphaned the dependents
// it knows; the collector can be done before limbo's first look at the deleted
// Bundle, which then looks like a background delete. Two pieces of evidence keep
// such a Bundle's teardown from deleting anything:
//
//   - orphanCascades remembers the finalizer from the Bundle's watch events,
//     which arrive in order whatever the cache holds by the time of the pass;
//   - after a restart (the memory is gone), an object the Bundle declares that is
//     labelled with its name, that nothing controls and that limbo did not
//     release is the collector's work (limbo keeps the objects it manages
//     controlled, and a teardown that releases one marks it).

// orphanCascades is the set of Bundles seen deleted with --cascade=orphan.
type orphanCascades struct{ uids sync.Map }

// predicate records what a Bundle's events say and lets every event through.
func (c *orphanCascades) predicate() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { c.observe(e.Object); return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { c.observe(e.ObjectNew); return true },
		DeleteFunc:  func(e event.DeleteEvent) bool { c.uids.Delete(e.Object.GetUID()); return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

func (c *orphanCascades) observe(obj client.Object) {
	if obj.GetDeletionTimestamp() != nil && controllerutil.ContainsFinalizer(obj, metav1.FinalizerOrphanDependents) {
		c.uids.Store(obj.GetUID(), true)
	}
}

func (c *orphanCascades) has(uid types.UID) bool {
	_, ok := c.uids.Load(uid)
	return ok
}

// deletedWithOrphanCascade reports whether b, being deleted, was deleted with
// --cascade=orphan (see orphanCascades); objects are the ones labelled with b's
// name, the evidence after a restart.
func (r *Reconciler) deletedWithOrphanCascade(b *limbov1alpha1.Bundle, plan *bundlespec.Plan, objects []*unstructured.Unstructured) bool {
	if controllerutil.ContainsFinalizer(b, metav1.FinalizerOrphanDependents) || r.orphanCascades.has(b.UID) {
		return true
	}
	if plan == nil {
		return false
	}
	for _, o := range objects {
		if _, declared := plan.Objects[objectKey(o)]; declared && orphanedByCollector(o) {
			return true
		}
	}
	return false
}

// orphanedByCollector reports whether o, labelled with a Bundle's name, has lost
// its controller without limbo releasing it.
func orphanedByCollector(o client.Object) bool {
	_, released := o.GetAnnotations()[limbov1alpha1.AnnotationReleased]
	_, pending := o.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	return metav1.GetControllerOf(o) == nil && !released && !pending
}

// orphanContent leaves b's objects to themselves, as --cascade=orphan promises:
// countdowns stop (or the reaper would find the objects stamped and delete them
// later), and an object b still controls — one the garbage collector missed — is
// disowned, or the collector would delete it once b is gone. objects are those
// labelled with b's name: an object a teardown released (a predecessor's of the
// same name, or b's own before the orphan delete) is the reaper's, not b's, and
// keeps its countdown.
func (r *Reconciler) orphanContent(ctx context.Context, b *limbov1alpha1.Bundle, objects []*unstructured.Unstructured) error {
	var err error
	const why = "the Bundle was deleted with --cascade=orphan"
	for _, o := range objects {
		switch owner := metav1.GetControllerOf(o); {
		case owner == nil && softdelete.Released(o):
			continue
		case owner == nil:
			err = r.Engine.CancelCountdown(ctx, b, o, why)
		case owner.UID == b.UID:
			err = r.Engine.Disown(ctx, b, o, b, why)
		default:
			continue // another Bundle's now
		}
		if err != nil {
			return err
		}
		r.applied.forget(o.GetUID())
	}
	return nil
}
