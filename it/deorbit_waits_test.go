package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// After its deletes, deorbit waits for the PV of the deleted claim to be gone
// (its provisioner deletes it) and for the LoadBalancer Service its cloud
// controller's finalizer holds: both named in ContentRemaining and in a
// DeorbitWaiting event each; a Failed PV is not waited for.
func TestDeorbitWaitsForVolumesAndLoadBalancers(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	volume, lb, b := deorbitHeldByLoadBalancer(t, ns, w)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitWaiting, "1 PV ("+volume.Name+") to be deleted by their provisioner")
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitWaiting, "1 LoadBalancer Service ("+ns+"/ingress), being deleted")
	waitTeardown(t, b, "waiting for 1 PV ("+volume.Name+") to be deleted by their provisioner")
	waitTeardown(t, b, "being deleted: 1 LoadBalancer Service ("+ns+"/ingress)")

	w.playProvisioner(volume)
	waitTeardown(t, b, "being deleted: 1 LoadBalancer Service ("+ns+"/ingress)")
	if getBundle(t, b).DeletionTimestamp == nil {
		t.Fatal("the Bundle is not being deleted")
	}
	w.releaseLoadBalancer(lb)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 PVCs, 1 LoadBalancer Services")
	waitBundleGone(t, b)
}
