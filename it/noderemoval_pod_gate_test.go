package it

import (
	"testing"
)

// A pod matching nodePodSelector still bound to the removed node holds the
// deletion past the deadline, with the reason in pendingDeletions; a pod that
// does not match holds nothing; once the pod is gone, the resources go.
func TestNodeRemovalPodGate(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	csiPod := n.podOn(t, ns, "csi-node", n.name, map[string]string{"app": "csi-baremetal-node"})
	n.podOn(t, ns, "other", n.name, map[string]string{"app": "web"})
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{"nodePodSelector": map[string]any{"matchLabels": map[string]any{"app": "csi-baremetal-node"}}})
	n.waitLabelled(t, true)
	deleteNode(t, n.name)

	n.waitHeldByPod(t, b, ns, "csi-node", n.name)
	n.deletePodAndWaitRemoved(t, csiPod)
}
