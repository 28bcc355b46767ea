package bundle

import (
	"context"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
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
// Bundle, which then looks like a background delete. Three pieces of evidence
// keep such a Bundle's teardown from deleting anything:
//
//   - cascades remembers the finalizer from the Bundle's watch events,
//     which arrive in order whatever the cache holds by the time of the pass
//     (and foregroundDeletion alike: --cascade=foreground's, which the
//     collector removes as soon as the dependents are gone — at once for a
//     Bundle whose objects are in another cluster — and after which limbo's
//     teardown would otherwise run the plugin teardowns foreground skips);
//   - after a restart (the memory is gone), an object the Bundle declares and
//     had (appliedByBundle), that nothing controls and that limbo did not
//     release is the collector's work (limbo keeps the objects it manages
//     controlled, and a teardown that releases one marks it). An object that
//     is only labelled with the Bundle's name proves nothing: a predecessor of
//     the same name deleted with --cascade=orphan leaves its objects so, which
//     a resource of the Bundle's that is Blocked never adopts, and anyone who
//     may create an object in the namespace can make one;
//   - when neither tells, the Bundle's own history: its versions since the
//     deletion, read back one by one (cascadeInHistory; foregroundDeletion
//     too). That covers the case
//     the other two miss — limbo's watch did not show the version that carried
//     orphan (limbo down, or its watch relisting after a kube-apiserver restart)
//     and the collector, its graph stale, removed orphan without orphaning
//     anything.

// cascades is the set of Bundles seen deleted with --cascade=orphan or
// --cascade=foreground, and how far back each deleted Bundle's history has
// been read.
type cascades struct {
	uids sync.Map // UID → the cascade's finalizer (cascadeFinalizers)
	// readBack maps a UID to the resource version down to which the Bundle's
	// history showed no cascade finalizer: later reads stop there.
	readBack sync.Map // UID → uint64
}

// predicate records what a Bundle's events say and lets every event through.
func (c *cascades) predicate() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { c.observe(e.Object); return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { c.observe(e.ObjectNew); return true },
		DeleteFunc:  func(e event.DeleteEvent) bool { c.forget(e.Object.GetUID()); return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// cascadeFinalizers are the finalizers a delete's propagation policy puts on
// the deleted object, orphan (--cascade=orphan) and foregroundDeletion
// (--cascade=foreground), until the garbage collector is done with its
// dependents.
var cascadeFinalizers = []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents}

// cascadeOf is the cascade finalizer obj, being deleted, carries ("": none).
func cascadeOf(obj client.Object) string {
	if obj.GetDeletionTimestamp() == nil {
		return ""
	}
	for _, f := range cascadeFinalizers {
		if controllerutil.ContainsFinalizer(obj, f) {
			return f
		}
	}
	return ""
}

// observe remembers the cascade obj's event shows. orphan, once seen, stays:
// a second delete may change the propagation finalizers, and of two cascades
// asked for, the one that deletes nothing is the one to keep.
//
// A Bundle seen not being deleted is forgotten: only an etcd restored from a
// snapshot taken before the delete "undeletes" a Bundle, and with the cascade
// remembered, its next plain delete was taken for the one before the restore
// (a foreground one had the teardown let the Bundle go at once, its delays
// skipped).
func (c *cascades) observe(obj client.Object) {
	if obj.GetDeletionTimestamp() == nil {
		c.forget(obj.GetUID())
		return
	}
	if f := cascadeOf(obj); f != "" && c.cascade(obj.GetUID()) != metav1.FinalizerOrphanDependents {
		c.uids.Store(obj.GetUID(), f)
	}
}

// cascade is the cascade finalizer the Bundle of uid was seen with ("": none).
func (c *cascades) cascade(uid types.UID) string {
	f, _ := c.uids.Load(uid)
	s, _ := f.(string)
	return s
}

func (c *cascades) forget(uid types.UID) {
	c.uids.Delete(uid)
	c.readBack.Delete(uid)
}

// deletedWith reports whether b, being deleted, carries the cascade finalizer f
// or was seen with it (see cascades).
func (r *Reconciler) deletedWith(b *limbov1alpha1.Bundle, f string) bool {
	return controllerutil.ContainsFinalizer(b, f) || r.cascades.cascade(b.UID) == f
}

// deletedWithOrphanCascade reports whether b, being deleted, was deleted with
// --cascade=orphan (see cascades); objects are the ones labelled with b's
// name, among which the evidence after a restart.
func (r *Reconciler) deletedWithOrphanCascade(b *limbov1alpha1.Bundle, plan *bundlespec.Plan, objects []*unstructured.Unstructured) bool {
	if r.deletedWith(b, metav1.FinalizerOrphanDependents) {
		return true
	}
	if plan == nil {
		return false
	}
	for _, o := range objects {
		if _, declared := plan.Objects[objectKey(o)]; declared && orphanedByCollector(o) && appliedByBundle(b, o) {
			return true
		}
	}
	return false
}

// historyDepth bounds the versions of a deleted Bundle read back: the delete, the
// collector's removal of orphan and the teardown's status writes since. Past it,
// the history tells nothing (background).
const historyDepth = 16

// versionBefore returns the metadata of the Bundle named key as it was just
// before resource version rv, nil if no Bundle of that name existed then.
type versionBefore func(ctx context.Context, key types.NamespacedName, rv uint64) (*metav1.PartialObjectMetadata, error)

// cascadeInHistory returns the cascade finalizer (orphan or
// foregroundDeletion) b, being deleted, carried in a version since its
// deletion ("": none), reading its versions back from the current one until the
// one before the deletion, a version at or below readBack (read before: none
// there), or historyDepth versions.
//
// Resource versions are comparable integers (KEP-5504, GA in Kubernetes 1.35),
// so the version before rv is the one an exact read at rv-1 returns. A history
// the API server has compacted (410 Expired: kube-apiserver compacts etcd every
// five minutes by default) tells nothing; any other error is returned, and the
// mode stays undecided.
func cascadeInHistory(ctx context.Context, b client.Object, readBack uint64, before versionBefore) (string, error) {
	rv, err := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	if err != nil {
		return "", nil // not an integer: no history to read
	}
	for range historyDepth {
		if rv <= readBack+1 {
			return "", nil
		}
		prev, err := before(ctx, client.ObjectKeyFromObject(b), rv)
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			return "", nil
		case err != nil:
			return "", err
		case prev == nil || prev.UID != b.GetUID() || prev.DeletionTimestamp == nil:
			return "", nil // reached the Bundle before its deletion
		}
		if f := cascadeOf(prev); f != "" {
			return f, nil
		}
		prevRV, err := strconv.ParseUint(prev.ResourceVersion, 10, 64)
		if err != nil || prevRV >= rv {
			return "", nil
		}
		rv = prevRV
	}
	return "", nil
}

// cascadeInHistory reads b's history (see cascadeInHistory) back to where an
// earlier pass stopped, and remembers the answer.
func (r *Reconciler) cascadeInHistory(ctx context.Context, b *limbov1alpha1.Bundle) (string, error) {
	var readBack uint64
	if v, ok := r.cascades.readBack.Load(b.UID); ok {
		readBack = v.(uint64)
	}
	cascade, err := cascadeInHistory(ctx, b, readBack, r.bundleVersionBefore)
	switch {
	case err != nil:
		return "", err
	case cascade != "":
		ctrl.LoggerFrom(ctx).Info("an earlier version of the deleted Bundle carried a cascade's finalizer: deleted with that cascade", "finalizer", cascade)
		r.cascades.uids.Store(b.UID, cascade)
	default:
		if rv, err := strconv.ParseUint(b.ResourceVersion, 10, 64); err == nil {
			r.cascades.readBack.Store(b.UID, rv)
		}
	}
	return cascade, nil
}

// bundleVersionBefore is a versionBefore that reads the API server: an exact
// list at rv-1, metadata only, of the Bundles of that name.
func (r *Reconciler) bundleVersionBefore(ctx context.Context, key types.NamespacedName, rv uint64) (*metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(limbov1alpha1.GroupVersion.WithKind("BundleList"))
	err := r.APIReader.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{
			ResourceVersion:      strconv.FormatUint(rv-1, 10),
			ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		}})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}

// appliedByBundle reports whether b's status records o, by its UID, as the
// object of one of b's resources that b applied: with an appliedDigest, which a
// pass records only for an object it created or applied and keeps only while
// the object is the same (settleAppliedDigests), or Ready, which a pass judges
// only of an object b controls (a Secret's entry has no digest). The entry of
// a resource that waits for its dependencies records the UID of the labelled
// object it found in its place too, which it adopts only once they are Ready.
func appliedByBundle(b *limbov1alpha1.Bundle, o client.Object) bool {
	for i := range b.Status.Resources {
		st := &b.Status.Resources[i]
		if st.Object != nil && st.Object.UID == string(o.GetUID()) && o.GetUID() != "" &&
			(st.AppliedDigest != "" || st.State == limbov1alpha1.ResourceReady) {
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
//
// A refused cancel (not holdsTeardown: Forbidden, Invalid) of an object b does
// not vouch for — its status neither lists it in limbo nor records it as
// applied — is only logged, as cancelObjectItems does with plugin items:
// anyone who may create an object in the namespace can label and stamp one that
// b's ServiceAccount may not write, and a refusal never clears, so it would
// hold the Bundle for good. Left stamped, it is not deleted: the reaper acts on
// released objects only.
func (r *Reconciler) orphanContent(ctx context.Context, b *limbov1alpha1.Bundle, objects []*unstructured.Unstructured, why string) error {
	var err error
	for _, o := range objects {
		switch owner := metav1.GetControllerOf(o); {
		case owner == nil && softdelete.Released(o):
			continue
		case owner == nil:
			err = r.Engine.CancelCountdown(ctx, b, o, why)
			if err != nil && !holdsTeardown(err) && !listedItem(&b.Status, o) && !appliedByBundle(b, o) {
				ctrl.LoggerFrom(ctx).Info("could not take out of limbo an object labelled with the Bundle's name that its status does not vouch for: left as it is",
					"object", objectPendingKey(o), "error", err.Error())
				continue
			}
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
