package bundle

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Reconciler reconciles Bundles.
type Reconciler struct {
	Client client.Client
}

// Reconcile records the observed generation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b limbov1alpha1.Bundle
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := b.Status.DeepCopy()
	status.ObservedGeneration = b.Generation
	if equality.Semantic.DeepEqual(status, &b.Status) {
		return ctrl.Result{}, nil
	}
	b.Status = *status
	return ctrl.Result{}, r.Client.Status().Update(ctx, &b)
}
