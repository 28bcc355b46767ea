package it

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// Items deleted by someone else while their countdown runs (NotFound at the
// deadline, the original's retry-for-24h) are success: no failure, and the
// teardown completes.
func TestDeorbitNotFoundMidway(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	claim, volume := w.volume("data", csiDriver, true)
	lb := w.service("lb", corev1.ServiceTypeLoadBalancer)
	b := deorbitBundle(t, ns, "6s", map[string]any{"loadBalancerWait": "0s"})
	waitArmed(t, b, "armed: 1 PVC, 1 LoadBalancer Service")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitTeardown(t, b, "to delete: 1 PVC ("+ns+"/data), 1 LoadBalancer Service ("+ns+"/lb)")
	if err := w.c.Delete(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	w.waitGone(claim)
	w.playProvisioner(volume)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 PVCs, 1 LoadBalancer Services")
	waitBundleGone(t, b)
	for _, reason := range []string{limbov1alpha1.EventDeleteFailed, deorbit.EventDeorbitFailed, deorbit.EventDeorbitTimedOut, limbov1alpha1.EventDeleted} {
		if n := len(eventsWith(t, b, reason, "")); n != 0 {
			t.Errorf("%d %s events; want none (the items were gone before their deadline)", n, reason)
		}
	}
}
