package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// Two removed nodes, one of whose Volumes the API server refuses to delete (a
// ValidatingAdmissionPolicy): the other node is removed completely; the failing
// node keeps its Volume (listed with the refusal) and its Csibmnode, which goes
// only after everything else of its node.
func TestNodeRemovalIsolation(t *testing.T) {
	ns := env.Namespace(t)
	failing := newCSINode(t, ns, "failing", drainTaint)
	healthy := newCSINode(t, ns, "healthy", drainTaint)
	volume := failing.objects[3]
	refuseDeletes(t, volume, "volumes")
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{})
	failing.waitLabelled(t, true)
	healthy.waitLabelled(t, true)
	deleteNode(t, failing.name)
	deleteNode(t, healthy.name)

	for _, o := range healthy.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	waitObject(t, noderemoval.GVK(noderemoval.KindCsibmnode), "", healthy.uuid, func(u *unstructured.Unstructured) error {
		if u.GetDeletionTimestamp() == nil {
			return fmt.Errorf("healthy Csibmnode not deleted")
		}
		return nil
	})
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		msgs := map[string]string{}
		for _, pd := range cur.Status.PendingDeletions {
			msgs[pd.Name] = pd.Message
		}
		if !strings.Contains(msgs[volume.GetName()], "refused by the test") {
			return fmt.Errorf("the Volume's entry does not show the refusal: %v", msgs)
		}
		if !strings.Contains(msgs[failing.uuid], "waiting for Volume") {
			return fmt.Errorf("the failing Csibmnode does not wait for its Volume: %v", msgs)
		}
		return nil
	})
	for _, o := range failing.objects[:3] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	testenv.Consistently(t, 3*time.Second, func() error {
		if c := failing.csibmnode(t); c == nil || c.GetDeletionTimestamp() != nil {
			return fmt.Errorf("the failing node's Csibmnode was deleted before its Volume")
		}
		return nil
	})
}

// refuseDeletes installs a ValidatingAdmissionPolicy (no webhook server needed)
// that denies DELETE of obj (resource is its kind's plural), and waits until the
// API server enforces it.
func refuseDeletes(t testing.TB, obj *unstructured.Unstructured, resource string) (lift func()) {
	t.Helper()
	return refuse(t, obj, resource, admissionregistrationv1.Delete, func(ctx context.Context) error {
		return env.Client.Delete(ctx, obj.DeepCopy(), client.DryRunAll)
	})
}

// refuseCreates is refuseDeletes for CREATE (and so for a server-side apply that
// would create obj).
func refuseCreates(t testing.TB, obj *unstructured.Unstructured, resource string) (lift func()) {
	t.Helper()
	return refuse(t, obj, resource, admissionregistrationv1.Create, func(ctx context.Context) error {
		return env.Client.Create(ctx, obj.DeepCopy(), client.DryRunAll)
	})
}

// refuse installs a ValidatingAdmissionPolicy that denies op on obj; probe makes
// a dry-run of op, to tell when the API server enforces the policy (and, once
// lifted, no longer does). The test's end lifts it, if the test did not.
func refuse(t testing.TB, obj *unstructured.Unstructured, resource string, op admissionregistrationv1.OperationType, probe func(context.Context) error) (lift func()) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-" + strings.ToLower(string(op)) + "-" + obj.GetNamespace() + "-" + obj.GetName()
	gvk := obj.GroupVersionKind()
	subject := "object"
	if op == admissionregistrationv1.Delete {
		subject = "oldObject"
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{op},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{gvk.Group}, APIVersions: []string{gvk.Version}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("%s.metadata.namespace != %q || %s.metadata.name != %q", subject, obj.GetNamespace(), subject, obj.GetName()),
				Message:    "refused by the test",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	// The policy takes effect, and goes, asynchronously: a dry run tells.
	refused := func(want bool) func() error {
		return func() error {
			err := probe(ctx)
			if got := err != nil && strings.Contains(err.Error(), "refused by the test"); got != want {
				return fmt.Errorf("dry-run %s of %s %s: %v; want refused = %v", op, gvk.Kind, obj.GetName(), err, want)
			}
			return nil
		}
	}
	lift = func() {
		for _, o := range []client.Object{binding, policy} {
			if err := env.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("lift the refusal: %v", err)
			}
		}
		testenv.Eventually(t, testenv.DefaultTimeout, refused(false))
	}
	t.Cleanup(lift)
	for _, o := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	testenv.Eventually(t, testenv.DefaultTimeout, refused(true))
	return lift
}
