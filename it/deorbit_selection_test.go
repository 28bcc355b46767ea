package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deorbit removes only the claims of PVs that a listed CSI driver provisioned and
// only LoadBalancer Services: another driver's, a hand-made and an NFS volume, a
// ClusterIP and a NodePort Service stay, unmarked.
func TestDeorbitOnlyListedProvisionerAndLoadBalancers(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	ours, volume := w.volume("ours", csiDriver, true)
	otherDriver, _ := w.volume("other-driver", "ebs.csi.aws.com", true)
	handMade, _ := w.volume("hand-made", csiDriver, false)
	nfs, _ := w.volume("nfs", "", false)
	lb := w.service("lb", corev1.ServiceTypeLoadBalancer)
	clusterIP := w.service("cluster-ip", corev1.ServiceTypeClusterIP)
	nodePort := w.service("node-port", corev1.ServiceTypeNodePort)
	b := deorbitBundle(t, ns, "0s", map[string]any{"loadBalancerWait": "0s"})
	waitArmed(t, b, "armed: 1 PVC, 1 LoadBalancer Service")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	w.waitGone(ours)
	w.waitGone(lb)
	w.playProvisioner(volume)
	waitBundleGone(t, b)
	for _, o := range []client.Object{otherDriver, handMade, nfs, clusterIP, nodePort} {
		if err := w.untouched(o); err != nil {
			t.Error(err)
		}
	}
}
