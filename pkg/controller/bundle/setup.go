package bundle

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Options tune the reconciler.
type Options struct {
	Workers int
}

// ManagedSelector selects the objects a Bundle manages or last managed.
func ManagedSelector() labels.Selector {
	req, err := labels.NewRequirement(limbov1alpha1.LabelBundle, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid requirement
	}
	return labels.NewSelector().Add(*req)
}

// SetupWithManager registers the Bundle reconciler.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	r := &Reconciler{Client: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bundle").
		For(&limbov1alpha1.Bundle{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		Complete(r)
}
