package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
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
	csiPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-node", Namespace: ns, Labels: map[string]string{"app": "csi-baremetal-node"}},
		Spec: corev1.PodSpec{NodeName: fqdn.Name, Containers: []corev1.Container{{Name: "c", Image: "csi-baremetal-node"}}}}
	if err := env.Client.Create(context.Background(), csiPod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{"nodePodSelector": map[string]any{"matchLabels": map[string]any{"app": "csi-baremetal-node"}}})
	n.waitLabelled(t, true) // matched by its address
	deleteNode(t, fqdn.Name)

	hold := fmt.Sprintf("held: pod %s/csi-node (nodePodSelector) is still bound to node %s", ns, fqdn.Name)
	n.waitPending(t, b, func(pd limbov1alpha1.PendingDeletion) error {
		if pd.DeleteAfter == nil || time.Now().Before(pd.DeleteAfter.Time) || !strings.Contains(pd.Message, hold) {
			return fmt.Errorf("not held past its deadline by the pod: %+v", pd)
		}
		return nil
	})
	for i, u := range n.live(t) {
		if u == nil || u.GetDeletionTimestamp() != nil {
			t.Fatalf("%s %s was deleted while the pod was bound", n.objects[i].GetKind(), n.objects[i].GetName())
		}
	}
	if got := n.csibmnode(t).GetAnnotations()[noderemoval.AnnotationNodeName]; got != fqdn.Name {
		t.Errorf("Csibmnode %s: %s = %q, want %q", n.uuid, noderemoval.AnnotationNodeName, got, fqdn.Name)
	}

	// There is no kubelet: the pod goes at once only with a zero grace period.
	if err := env.Client.Delete(context.Background(), csiPod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for _, o := range n.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if c := n.csibmnode(t); c != nil && c.GetDeletionTimestamp() == nil {
			return fmt.Errorf("Csibmnode %s not deleted", n.uuid)
		}
		return nil
	})
}
