package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// A controller restart in the middle of a deorbit (the claim deleted, the load
// balancer still held) resumes from the state kept on the Bundle: the finished
// steps are not repeated (one Deleted and one DeorbitDeleted event for the claim,
// one DeorbitWaiting for the Service) and the deorbit completes.
func TestDeorbitResumesAfterRestart(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	volume, lb, b := deorbitHeldByLoadBalancer(t, ns, w)
	w.playProvisioner(volume)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDeleted, "deleted 1 PVC")
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitWaiting, "1 LoadBalancer Service ("+ns+"/ingress), being deleted")
	if err := env.RestartController(nil); err != nil {
		t.Fatal(err)
	}
	waitTeardown(t, b, "being deleted: 1 LoadBalancer Service ("+ns+"/ingress)")
	w.releaseLoadBalancer(lb)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 PVCs, 1 LoadBalancer Services")
	waitBundleGone(t, b)

	for _, tc := range []struct{ reason, part string }{
		{limbov1alpha1.EventDeleted, "PersistentVolumeClaim " + ns + "/data in cluster workload-kubeconfig deleted"},
		{limbov1alpha1.EventDeleted, "Service " + ns + "/ingress in cluster workload-kubeconfig deleted"},
		{deorbit.EventDeorbitDeleted, "deleted 1 PVC"},
		{deorbit.EventDeorbitWaiting, "LoadBalancer Service"},
		{deorbit.EventDeorbitDone, ""},
	} {
		evs := eventsWith(t, b, tc.reason, tc.part)
		count := int32(0)
		for _, e := range evs {
			count += max(e.Count, 1)
		}
		if count != 1 {
			t.Errorf("%s %q: %d events, want exactly 1 (a finished step was repeated)", tc.reason, tc.part, count)
		}
	}
}
