package bundle

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// teardown removes a deleted Bundle's content before its finalizer goes, modelled
// on the namespace controller: each pass deletes what it can, reports what remains
// and comes back.
//
//   - --cascade=orphan (finalizer orphan) and --cascade=foreground (finalizer
//     foregroundDeletion): the garbage collector orphans or deletes the dependents;
//     limbo deletes nothing and lets the Bundle go.
//   - background (kubectl's default): objects go in reverse dependency order, each
//     wave once the previous one is gone. Objects with a deletion delay are released
//     to the reaper instead of deleted.
func (r *Reconciler) teardown(ctx context.Context, b *limbov1alpha1.Bundle) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, limbov1alpha1.FinalizerTeardown) {
		return ctrl.Result{}, nil
	}
	// Removing a cleanup job stops its deletions: pending Tombstones are cancelled,
	// never executed, whatever the cascade mode (the items stay).
	if err := r.cancelTombstones(ctx, b); err != nil {
		return ctrl.Result{}, err
	}
	if controllerutil.ContainsFinalizer(b, metav1.FinalizerOrphanDependents) {
		// Nothing is deleted: countdowns in progress stop too, or the reaper would
		// find the orphaned objects stamped and delete them later.
		if err := r.cancelCountdowns(ctx, b, kindsOf(b, nil)); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.removeFinalizer(ctx, b)
	}
	if controllerutil.ContainsFinalizer(b, metav1.FinalizerDeleteDependents) {
		return ctrl.Result{}, r.removeFinalizer(ctx, b)
	}
	plan, _ := bundlespec.Parse(b, r.Mapper, r.Plugins) // an invalid spec is torn down in one wave
	if plan != nil {
		// Plugin teardowns run first: deorbit needs the objects still there.
		if remaining, err := r.teardownPlugins(ctx, b, plan); err != nil || len(remaining) > 0 {
			var failures []string
			if err != nil {
				failures = append(failures, err.Error())
			}
			if err := r.teardownStatus(ctx, b, remaining, failures); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: teardownInterval}, nil
		}
	}
	objects, err := r.controlled(ctx, b, kindsOf(b, plan))
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, wave := range teardownWaves(plan, objects) {
		if len(wave) == 0 {
			continue
		}
		var failures []string
		for _, o := range wave {
			if o.GetDeletionTimestamp() != nil {
				continue // on its way out
			}
			if _, delayed := o.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; delayed {
				err = r.Engine.Release(ctx, b, o, b)
			} else {
				err = r.Engine.Orphan(ctx, b, o, softdelete.ControlledBy(b.UID)).Err
			}
			if err != nil {
				failures = append(failures, err.Error())
			}
			r.applied.forget(o.GetUID())
		}
		if err := r.teardownStatus(ctx, b, describeObjects(wave), failures); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: teardownInterval}, nil
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, b)
}

// teardownWaves groups objects for deletion: objects no resource declares first,
// then the resources' objects in reverse dependency order.
func teardownWaves(plan *bundlespec.Plan, objects []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	if plan == nil {
		return [][]*unstructured.Unstructured{objects}
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		byKey[objectKey(o.GroupVersionKind().GroupKind(), o.GetName())] = o
	}
	waves := [][]*unstructured.Unstructured{nil}
	resourceWaves, err := plan.Graph.ReverseWaves()
	if err != nil {
		return [][]*unstructured.Unstructured{objects}
	}
	for _, names := range resourceWaves {
		var wave []*unstructured.Unstructured
		for _, name := range names {
			res := plan.Resources[name]
			if res.Template == nil {
				continue
			}
			key := objectKey(res.GVK.GroupKind(), res.Template.GetName())
			if o, ok := byKey[key]; ok {
				wave = append(wave, o)
				delete(byKey, key)
			}
		}
		waves = append(waves, wave)
	}
	for _, o := range objects { // undeclared objects, in sorted order
		if _, ok := byKey[objectKey(o.GroupVersionKind().GroupKind(), o.GetName())]; ok {
			waves[0] = append(waves[0], o)
		}
	}
	return waves
}

// cancelCountdowns takes the objects labelled with b's name out of limbo, whether
// b still controls them or the garbage collector already orphaned them.
func (r *Reconciler) cancelCountdowns(ctx context.Context, b *limbov1alpha1.Bundle, kinds []schema.GroupVersionKind) error {
	objects, err := r.labelled(ctx, b, kinds)
	if err != nil {
		return err
	}
	for _, o := range objects {
		if owner := metav1.GetControllerOf(o); owner != nil && owner.UID != b.UID {
			continue // another Bundle's now
		}
		if err := r.Engine.CancelCountdown(ctx, b, o, "the Bundle was deleted with --cascade=orphan"); err != nil {
			return err
		}
	}
	return nil
}

// cancelTombstones removes b's Tombstones without deleting their items.
func (r *Reconciler) cancelTombstones(ctx context.Context, b *limbov1alpha1.Bundle) error {
	var tombstones limbov1alpha1.TombstoneList
	if err := r.Client.List(ctx, &tombstones, client.InNamespace(b.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: b.Name}); err != nil {
		return err
	}
	for i := range tombstones.Items {
		if err := r.Engine.CancelTombstone(ctx, b, &tombstones.Items[i], "the Bundle is being deleted"); err != nil {
			return err
		}
	}
	return nil
}

// teardownPlugins runs the teardown of every plugin resource that has one, and
// returns what is still in progress.
func (r *Reconciler) teardownPlugins(ctx context.Context, b *limbov1alpha1.Bundle, plan *bundlespec.Plan) ([]string, error) {
	var remaining []string
	for _, name := range plan.Order {
		res := plan.Resources[name]
		if res.Plugin == nil {
			continue
		}
		p, ok := r.Plugins.Get(res.Plugin.Name)
		tearDowner, has := p.(plugin.TearDowner)
		if !ok || !has {
			continue
		}
		spec, err := plugin.ResolveSpecFromStatus(ctx, r.APIReader, b, name)
		if err != nil {
			return append(remaining, fmt.Sprintf("plugin resource %s", name)), fmt.Errorf("plugin resource %q spec: %w", name, err)
		}
		req := plugin.Request{Bundle: b, Resource: name, Spec: spec, Client: r.Client, Reader: r.APIReader, Now: r.Clock.Now()}
		type outcome struct {
			done bool
			msg  string
		}
		out, err := plugin.WithTimeout(ctx, func(ctx context.Context) (outcome, error) {
			done, msg, err := tearDowner.Teardown(ctx, req)
			return outcome{done, msg}, err
		})
		if err != nil {
			return append(remaining, fmt.Sprintf("plugin resource %s", name)), fmt.Errorf("plugin resource %q teardown: %w", name, err)
		}
		if !out.done {
			remaining = append(remaining, fmt.Sprintf("plugin resource %s (%s)", name, out.msg))
		}
	}
	return remaining, nil
}

func describeObjects(objects []*unstructured.Unstructured) []string {
	names := make([]string, len(objects))
	for i, o := range objects {
		names[i] = fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
	}
	return names
}

func (r *Reconciler) teardownStatus(ctx context.Context, b *limbov1alpha1.Bundle, names []string, failures []string) error {
	st := *b.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionContentRemaining, Status: metav1.ConditionTrue,
		Reason: "SomeResourcesRemain", Message: "waiting for " + strings.Join(names, ", ") + " to be deleted", ObservedGeneration: b.Generation})
	failure := metav1.Condition{Type: ConditionDeletionFailure, Status: metav1.ConditionFalse, Reason: ReasonAsExpected, ObservedGeneration: b.Generation}
	if len(failures) > 0 {
		failure.Status, failure.Reason, failure.Message = metav1.ConditionTrue, "DeleteFailed", strings.Join(failures, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, failure)
	return r.writeStatus(ctx, b, st)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, b *limbov1alpha1.Bundle) error {
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, limbov1alpha1.FinalizerTeardown)
	return client.IgnoreNotFound(r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}
