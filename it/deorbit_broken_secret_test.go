package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
)

// A kubeconfig Secret that holds no kubeconfig, or that is missing, is the
// resource's Error naming the Secret and the problem; nothing is deleted in the
// cluster it was meant to reach, not even at teardown, which gives up after the
// timeout with DeorbitTimedOut naming the problem.
func TestDeorbitBrokenKubeconfigSecret(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	claim, _ := w.volume("data", csiDriver, true)
	lb := w.service("lb", corev1.ServiceTypeLoadBalancer)
	broken := remotecluster.NewKubeconfigSecret(ns, "broken-kubeconfig", []byte("not: [a kubeconfig"))
	if err := env.Client.Create(context.Background(), broken); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ secret, message string }{
		{"broken-kubeconfig", `kubeconfig Secret "broken-kubeconfig" (key "value"): InvalidKubeconfig: not a kubeconfig`},
		{"missing-kubeconfig", `kubeconfig Secret "missing-kubeconfig" not found in namespace "` + ns + `"`},
	} {
		b := deorbitBundle(t, ns, "", map[string]any{"kubeConfigSecretRef": map[string]any{"name": tc.secret}, "timeout": "3s"})
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if err := resourceIs(cur, deorbitResource, limbov1alpha1.ResourceError, ""); err != nil {
				return err
			}
			if msg := resourceStatus(cur, deorbitResource).Message; !strings.Contains(msg, tc.message) {
				return fmt.Errorf("resource message %q, want it to contain %q", msg, tc.message)
			}
			return conditionIs(cur, "Ready", metav1.ConditionFalse, "")
		})
		testenv.Consistently(t, 2*time.Second, func() error {
			if err := w.untouched(claim); err != nil {
				return err
			}
			return w.untouched(lb)
		})
		deleteBundle(t, b, metav1.DeletePropagationBackground)
		waitEventContaining(t, b, corev1.EventTypeWarning, deorbit.EventDeorbitTimedOut, "timeout 3s passed", tc.message)
		waitBundleGone(t, b)
		for _, o := range []client.Object{claim, lb} {
			if err := w.untouched(o); err != nil {
				t.Error(err)
			}
		}
	}
}
