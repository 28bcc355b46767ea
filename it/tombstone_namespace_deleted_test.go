package it

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
)

// Deleting a namespace cancels its pending Tombstones, never executes them: the
// namespace controller deletes each kind in turn, in no set order, and a
// Tombstone deleted while its Bundle is not yet being deleted looked like
// `kubectl delete tombstone`, which forces the external delete — an hour
// early, and of an item whose cleanup job was going away. The test holds the
// Bundle's deletion back (an admission policy) so that the Tombstone goes first.
func TestNamespaceDeletionCancelsTombstones(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	b, ts := e.orphan(t, "ext-ns-deleted", "1h")
	holdBundleDeletes(t, e.ns)
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		err := env.Client.Delete(ctx, getBundle(t, b), client.DryRunAll)
		if err == nil {
			return fmt.Errorf("the admission policy does not hold Bundle deletes yet")
		}
		return nil
	})

	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if cur, err := getTombstone(&ts); err == nil && cur.UID == ts.UID {
			return fmt.Errorf("Tombstone %s is still there (deleted: %v)", ts.Name, cur.DeletionTimestamp != nil)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	if err := e.untouched("orphan", "keep")(); err != nil {
		t.Fatalf("the namespace's deletion ran the cleanup job's pending delete: %v", err)
	}
}

// holdBundleDeletes refuses every DELETE of a Bundle in namespace ns until the
// test ends.
func holdBundleDeletes(t testing.TB, ns string) {
	t.Helper()
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-bundles-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"limbo.dev"}, APIVersions: []string{"*"}, Resources: []string{"bundles"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "held by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(testenv.Context(t, testenv.DefaultTimeout), o); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete %T: %v", o, err)
			}
		})
	}
}
