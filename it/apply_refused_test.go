package it

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A template the API server refuses as it stands (a field the kind does not
// have: `dat:` for `data:`) is an error that no retry clears: the Bundle is
// Stalled, naming it, as an Invalid object is. It was Reconciling with
// retries, Stalled=False (ApplyFailed), like an API server that is down.
func TestApplyRefusedIsStalled(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	typo := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "typo"}, "dat": map[string]any{"k": "v"}}
	b := createBundle(t, ns, "typo", objectResource(t, "config", typo))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "config", limbov1alpha1.ResourceError, "Invalid"); err != nil {
			return err
		}
		if err := conditionIs(cur, "Stalled", metav1.ConditionTrue, limbov1alpha1.ReasonResourceError); err != nil {
			return err
		}
		return conditionIs(cur, "Reconciling", metav1.ConditionFalse, limbov1alpha1.ReasonResourceError)
	})
}
