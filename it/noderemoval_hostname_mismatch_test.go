package it

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// registerUnderFQDN replaces n's Node by one named n.name.example.com with the
// Csibmnode's InternalIP (with taints), as a kubelet with FQDN node names
// registers it: no Node has the Csibmnode's hostname any more.
func (n *csiNode) registerUnderFQDN(t testing.TB, taints ...corev1.Taint) *corev1.Node {
	t.Helper()
	ip, _, _ := unstructured.NestedString(n.objects[4].Object, "spec", "Addresses", "InternalIP")
	if ip == "" {
		t.Fatal("the Csibmnode has no InternalIP")
	}
	fqdn := createNode(t, n.name+".example.com", taints...)
	t.Cleanup(func() { removeForGood(t, nodeGVK, "", fqdn.Name) })
	fqdn.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if err := env.Client.Status().Update(context.Background(), fqdn); err != nil {
		t.Fatal(err)
	}
	deleteNode(t, n.name)
	return fqdn
}

// A Node named otherwise than its Csibmnode's hostname (a hostname override,
// FQDN node names) but with its InternalIP is a Node that exists: even with
// removeUndrained: true, its csi-baremetal resources are not removed.
func TestNodeRemovalHostnameMismatch(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "fqdn")
	n.registerUnderFQDN(t)

	b := nodeRemovalBundle(t, ns, "2s", map[string]any{"removeUndrained": true})
	cur := waitNodeRemovalReady(t, b, "Csibmnodes")
	if st := resourceStatus(cur, nrResource); strings.Contains(st.Message, "removed") || len(cur.Status.PendingDeletions) > 0 {
		t.Fatalf("the resources of a Node that exists are being removed: message %q, pendingDeletions %+v", st.Message, cur.Status.PendingDeletions)
	}
	for _, o := range n.live(t) {
		if _, stamped := o.GetAnnotations()["limbo.dev/deletionTimestamp"]; stamped {
			t.Errorf("%s %s is stamped for deletion", o.GetKind(), o.GetName())
		}
	}
}

// The csi-baremetal-node pod of an FQDN-named Node is bound to the FQDN, not to
// the Csibmnode's hostname: once the Node is deleted, the pod still holds the
// node's resources past their deadline, and they go once it is gone.
func TestNodeRemovalHostnameMismatchPodGate(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "fqdn")
	fqdn := n.registerUnderFQDN(t, drainTaint)
	csiPod := n.podOn(t, ns, "csi-node", fqdn.Name, map[string]string{"app": "csi-baremetal-node"})
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{"nodePodSelector": map[string]any{"matchLabels": map[string]any{"app": "csi-baremetal-node"}}})
	n.waitMarkedDrained(t) // matched by its address
	deleteNode(t, fqdn.Name)

	n.waitHeldByPod(t, b, ns, "csi-node", fqdn.Name)
	if got := n.csibmnode(t).GetAnnotations()[noderemoval.AnnotationNodeName]; got != fqdn.Name {
		t.Errorf("Csibmnode %s: %s = %q, want %q", n.uuid, noderemoval.AnnotationNodeName, got, fqdn.Name)
	}

	n.deletePodAndWaitRemoved(t, csiPod)
}

// waitMarkedDrained waits until n's Csibmnode, whose hostname is not its Node's
// name, is marked drained with limbo's annotation and carries no drain label:
// csi-baremetal's operator would take its hostname for its Node's name, find no
// Node of that name, and remove the live node's records at once.
func (n *csiNode) waitMarkedDrained(t testing.TB) {
	t.Helper()
	waitObject(t, noderemoval.GVK(noderemoval.KindCsibmnode), "", n.uuid, func(u *unstructured.Unstructured) error {
		if u.GetAnnotations()[noderemoval.AnnotationDrained] != "true" || u.GetLabels()[noderemoval.LabelDrain] != "" {
			return fmt.Errorf("Csibmnode %s: annotations %v, labels %v; want %s and no %s", n.uuid, u.GetAnnotations(), u.GetLabels(), noderemoval.AnnotationDrained, noderemoval.LabelDrain)
		}
		return nil
	})
}
