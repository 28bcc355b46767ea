package it

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// A Node with the drain taint (key, value and effect) gets the drain label on its
// Csibmnode, and loses it when the taint goes; a taint with another effect is not
// the drain taint. The label write touches only that label.
func TestNodeRemovalDrainLabel(t *testing.T) {
	ns := env.Namespace(t)
	drained := newCSINode(t, ns, "drained", drainTaint)
	wrongEffect := newCSINode(t, ns, "noexecute", corev1.Taint{Key: drainTaint.Key, Value: drainTaint.Value, Effect: corev1.TaintEffectNoExecute})
	before := wrongEffect.csibmnode(t)
	b := nodeRemovalBundle(t, ns, "1h", map[string]any{})

	drained.waitLabelled(t, true)
	// Both nodes are judged in the same run: the label on one proves the other was
	// looked at.
	waitNodeRemovalReady(t, b, "Csibmnodes")
	if after := wrongEffect.csibmnode(t); after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("the Csibmnode of a Node tainted NoExecute was written: labels %v", after.GetLabels())
	}
	labelled := drained.csibmnode(t)
	if !equality.Semantic.DeepEqual(labelled.Object["spec"], drained.objects[4].Object["spec"]) || len(labelled.GetFinalizers()) != 1 {
		t.Errorf("the label write changed more than the label: %v", labelled.Object)
	}

	// The taint goes: so does the label.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var node corev1.Node
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: drained.name}, &node); err != nil {
			return err
		}
		node.Spec.Taints = nil
		return env.Client.Update(context.Background(), &node)
	})
	drained.waitLabelled(t, false)
	if _, ok := drained.csibmnode(t).GetLabels()[noderemoval.LabelDrain]; ok {
		t.Error("the label key is still there")
	}
}
