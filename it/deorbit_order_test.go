package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// At teardown deorbit runs before anything else goes: while it waits for a load
// balancer (the Service held by the cloud controller's finalizer), the Bundle's
// own ConfigMap is still there and ContentRemaining names what deorbit waits for;
// once the load balancer is gone, DeorbitDone, then the ConfigMap, then the Bundle.
func TestDeorbitRunsBeforeTheBundlesObjects(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	volume, lb, b := deorbitHeldByLoadBalancer(t, ns, w, objectResource(t, "settings", configMap("settings", map[string]any{"a": "b"}, nil)))
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitWaiting, "1 LoadBalancer Service ("+ns+"/ingress)")
	waitTeardown(t, b, "plugin resource deorbit (")
	if getObject(t, configMapGVK, ns, "settings") == nil {
		t.Fatal("the Bundle's ConfigMap went before deorbit was done")
	}

	w.playProvisioner(volume)
	w.releaseLoadBalancer(lb)
	w.waitGone(lb)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 PVCs, 1 LoadBalancer Services")
	waitBundleGone(t, b)
	if getObject(t, configMapGVK, ns, "settings") != nil {
		t.Error("the Bundle is gone, its ConfigMap is not")
	}
	if n := len(eventsWith(t, b, limbov1alpha1.EventDeleteFailed, "")); n != 0 {
		t.Errorf("%d DeleteFailed events", n)
	}
}
