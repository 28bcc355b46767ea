package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// A load balancer that never goes: past timeout deorbit gives up with a Warning
// DeorbitTimedOut naming the debris, and the teardown goes on (the Bundle's own
// ConfigMap goes, then the Bundle); the debris stays.
func TestDeorbitTimeoutNamesDebris(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	lb := w.service("stuck", corev1.ServiceTypeLoadBalancer, deorbit.FinalizerLoadBalancerCleanup)
	b := deorbitBundle(t, ns, "0s", map[string]any{"timeout": "8s"}, objectResource(t, "settings", configMap("settings", map[string]any{"a": "b"}, nil)))
	waitArmed(t, b, "armed: 0 PVCs, 1 LoadBalancer Service")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitEventContaining(t, b, corev1.EventTypeWarning, deorbit.EventDeorbitTimedOut, "timeout 8s passed", "debris left behind: 1 LoadBalancer Service ("+ns+"/stuck)")
	waitBundleGone(t, b)
	if getObject(t, configMapGVK, ns, "settings") != nil {
		t.Error("the teardown did not go on after deorbit gave up: the ConfigMap is still there")
	}
	cur := lb.DeepCopy()
	if !w.get(cur) || cur.DeletionTimestamp == nil {
		t.Errorf("the stuck Service should be left, terminating: %+v", cur.ObjectMeta)
	}
	if n := len(eventsWith(t, b, deorbit.EventDeorbitDone, "")); n != 0 {
		t.Errorf("%d DeorbitDone events after a give-up", n)
	}
}
