package it

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// A LoadBalancer Service that no finalizer guards is gone at its delete, its
// cloud load balancer maybe not: deorbit waits loadBalancerWait after the delete
// before it is done.
func TestDeorbitLoadBalancerWait(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	lb := w.service("lb", corev1.ServiceTypeLoadBalancer)
	b := deorbitBundle(t, ns, "0s", map[string]any{"loadBalancerWait": "10s"})
	waitArmed(t, b, "armed: 0 PVCs, 1 LoadBalancer Service")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	w.waitGone(lb)
	goneAt := time.Now()
	waitTeardown(t, b, "for load balancers (loadBalancerWait)")
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitWaiting, "loadBalancerWait 10s")
	// Well within the wait, the Bundle is still there.
	if until := time.Until(goneAt.Add(5 * time.Second)); until > 0 {
		testenv.Consistently(t, until, func() error {
			getBundle(t, b)
			return nil
		})
	}
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 LoadBalancer Services")
	waitBundleGone(t, b)
}
