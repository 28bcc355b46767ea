package it

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A spec error is terminal: the Bundle is Stalled (InvalidSpec), and the
// reconcile ends with a terminal error (controller_runtime_terminal_reconcile_errors_total),
// which the work queue does not retry: only a change of the spec helps. (The
// counter is the process's, shared with other tests: the test asserts that it
// grew, and so does not run in parallel.)
func TestSpecErrorIsTerminal(t *testing.T) {
	ns := env.Namespace(t)
	before := bundleControllerCounter(t, "controller_runtime_terminal_reconcile_errors_total")
	b := createBundle(t, ns, "shop", objectResource(t, "cluster", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "cluster-scoped"}}))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionIs(cur, "Stalled", metav1.ConditionTrue, "InvalidSpec"); err != nil {
			return err
		}
		return conditionIs(cur, "Reconciling", metav1.ConditionFalse, "InvalidSpec")
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if n := bundleControllerCounter(t, "controller_runtime_terminal_reconcile_errors_total"); n <= before {
			return fmt.Errorf("controller_runtime_terminal_reconcile_errors_total{controller=bundle} did not grow (%v)", n)
		}
		return nil
	})
}
