package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// A removed node's InternalIP handed to a new Node (DHCP, a hardware swap) does
// not bring the removed node back: its resources stay in limbo with their
// deadlines, and its Csibmnode keeps the drain label although the new Node is
// not drained. Only a Node of its name cancels.
func TestNodeRemovalIPReuse(t *testing.T) {
	ns := env.Namespace(t)
	w3 := newCSINode(t, ns, "w3", drainTaint)
	b := nodeRemovalBundle(t, ns, "1h", map[string]any{})
	inLimbo := w3.remove(t, b)

	// w9 registers with w3's old address and gets its own Csibmnode (the helper
	// gives every Csibmnode the same InternalIP).
	w9 := newCSINode(t, ns, "w9")
	ip, _, _ := unstructured.NestedString(w3.objects[4].Object, "spec", "Addresses", "InternalIP")
	var node corev1.Node
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: w9.name}, &node); err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if err := env.Client.Status().Update(context.Background(), &node); err != nil {
		t.Fatal(err)
	}

	// A Node created after the address was written: a run whose counts include
	// it listed the Nodes after the write, so it saw w9 with w3's address. (The
	// runs that the creates of w9 and its Csibmnode started saw w9 without an
	// address, and write the same message.)
	createNode(t, ns+"-after-ip")
	t.Cleanup(func() { removeForGood(t, nodeGVK, "", ns+"-after-ip") })
	var counts string
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		var err error
		if counts, err = nodeRemovalCounts(); err != nil {
			return err
		}
		if st := resourceStatus(cur, nrResource); st == nil || (st.Message != counts && !strings.HasPrefix(st.Message, counts+";")) {
			return fmt.Errorf("resource %s: %+v, want a message opening with %q", nrResource, st, counts)
		}
		return nil
	})
	// That run still has w3 removed.
	if want, got := counts+"; removed (in limbo): "+w3.name, resourceStatus(cur, nrResource).Message; got != want {
		t.Errorf("resource %s: message %q, want %q", nrResource, got, want)
	}
	// And so do the runs that follow (paced: up to --plugin-event-interval after
	// the events that bring them): nothing of w3 comes back.
	testenv.Consistently(t, env.ControllerOptions().PluginEventInterval+2*time.Second, func() error {
		for i, u := range w3.live(t) {
			if u == nil {
				return fmt.Errorf("%s %s was deleted", w3.objects[i].GetKind(), w3.objects[i].GetName())
			}
			want := inLimbo[i].GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]
			if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; got != want {
				return fmt.Errorf("%s %s: stamp %q, was %q: its countdown was cancelled", u.GetKind(), u.GetName(), got, want)
			}
		}
		if c := w3.csibmnode(t); c.GetLabels()[noderemoval.LabelDrain] != noderemoval.DrainValue {
			return fmt.Errorf("w3's Csibmnode lost its drain label: labels %v", c.GetLabels())
		} else if name, ok := c.GetAnnotations()[noderemoval.AnnotationNodeName]; ok {
			return fmt.Errorf("w3's Csibmnode was bound to Node %s", name)
		}
		if _, err := eventContaining(t, b, "Normal", limbov1alpha1.EventDeletionCancelled, w3.uuid); err == nil {
			return fmt.Errorf("a countdown of %s was cancelled", w3.name)
		}
		return nil
	})
	for _, u := range w9.live(t) {
		if err := notInLimbo(u); err != nil {
			t.Error(err)
		}
	}
}

// nodeRemovalCounts is how node-removal's message opens for the cluster as it
// is now: its Csibmnodes and its Nodes.
func nodeRemovalCounts() (string, error) {
	csibmnodes := &unstructured.UnstructuredList{}
	csibmnodes.SetGroupVersionKind(noderemoval.GVK(noderemoval.KindCsibmnode + "List"))
	if err := env.Client.List(context.Background(), csibmnodes); err != nil {
		return "", err
	}
	var nodes corev1.NodeList
	if err := env.Client.List(context.Background(), &nodes); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d Csibmnodes, %d Nodes", len(csibmnodes.Items), len(nodes.Items)), nil
}
