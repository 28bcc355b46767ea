package it

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Node named otherwise than its Csibmnode's hostname (a hostname override,
// FQDN node names) but with its InternalIP is a Node that exists: even with
// removeUndrained: true, its csi-baremetal resources are not removed.
func TestNodeRemovalHostnameMismatch(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "fqdn")
	ip, _, _ := unstructured.NestedString(n.objects[4].Object, "spec", "Addresses", "InternalIP")
	if ip == "" {
		t.Fatal("the Csibmnode has no InternalIP")
	}
	// The Node as the kubelet registered it: under its FQDN, with the address.
	fqdn := createNode(t, n.name+".example.com")
	t.Cleanup(func() { removeForGood(t, nodeGVK, "", fqdn.Name) })
	fqdn.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if err := env.Client.Status().Update(context.Background(), fqdn); err != nil {
		t.Fatal(err)
	}
	deleteNode(t, n.name) // no Node has the Csibmnode's hostname any more

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
