package it

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A failed apply that clears by itself is retried, not Stalled: while the API
// server cannot reach an admission webhook for the namespace's ConfigMaps (it
// answers 500 InternalError), the resource is in Error (ApplyFailed) and the
// Bundle is Reconciling with retries, Stalled=False; once the webhook is gone,
// the apply succeeds without any change to the Bundle.
func TestApplyFailureIsTransient(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	unreachableWebhook(t, ns)
	b := createBundle(t, ns, "shop", objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil)))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "config", limbov1alpha1.ResourceError, limbov1alpha1.ReasonApplyFailed); err != nil {
			return err
		}
		if err := conditionIs(cur, "Stalled", metav1.ConditionFalse, "ProgressingWithRetry"); err != nil {
			return err
		}
		return conditionIs(cur, "Reconciling", metav1.ConditionTrue, "ProgressingWithRetry")
	})
	generation := getBundle(t, b).Generation

	removeWebhook(t, ns)
	if cur := waitReady(t, b); cur.Generation != generation {
		t.Errorf("the Bundle changed (generation %d, was %d); the retry alone was to apply it", cur.Generation, generation)
	}
}

// webhookName is the name of the ValidatingWebhookConfiguration of namespace ns.
func webhookName(ns string) string { return "unreachable-" + ns }

// unreachableWebhook installs a webhook for the CREATE and UPDATE of ConfigMaps
// in namespace ns that nobody serves (failurePolicy Fail), and waits until the
// API server calls it: its writes of those ConfigMaps fail with 500.
func unreachableWebhook(t *testing.T, ns string) {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookName(ns)},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "unreachable.test.limbo.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	if err := env.Client.Create(context.Background(), cfg); err != nil {
		t.Fatalf("create the webhook: %v", err)
	}
	t.Cleanup(func() { removeWebhook(t, ns) })
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
		err := env.Client.Create(context.Background(), probe, client.DryRunAll)
		if err == nil || !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed calling webhook") {
			return fmt.Errorf("a dry-run create of a ConfigMap: %v; want the webhook's failure", err)
		}
		return nil
	})
}

// removeWebhook deletes the webhook of namespace ns.
func removeWebhook(t *testing.T, ns string) {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookName(ns)}}
	if err := env.Client.Delete(context.Background(), cfg); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete the webhook: %v", err)
	}
}
