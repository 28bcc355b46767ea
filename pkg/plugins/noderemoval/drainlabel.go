package noderemoval

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// Mirroring a Node's drain taint and name on its Csibmnode.

// wasDrained reports whether the Csibmnode obj says its Node was drained for
// removal: the drain label, or AnnotationDrained (see syncCsibmnode).
func wasDrained(obj metav1.Object) bool {
	_, marked := obj.GetAnnotations()[AnnotationDrained]
	return obj.GetLabels()[LabelDrain] == DrainValue || marked
}

func hasTaint(node *corev1.Node, t Taint) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key == t.Key && taint.Value == t.Value && string(taint.Effect) == t.Effect {
			return true
		}
	}
	return false
}

// syncCsibmnode brings a matched Csibmnode in line with its Node, with a patch
// that touches only the drain label, AnnotationDrained and AnnotationNodeName,
// guarded by the resourceVersion it decided on; a conflict re-reads and decides
// again.
//   - Drained, for a Node in scope: while the Node is tainted; no longer once it
//     is not. A Csibmnode whose hostname is its Node's name says it with the
//     drain label, as csi-baremetal's operator does; one whose hostname is not
//     (an FQDN Node name) with AnnotationDrained, and never the label: the
//     operator reads the label with the hostname as the Node's name, and would
//     remove at once the records of the live Node it finds no Node of that
//     name for. A label of another value (planned-downtime) is someone else's:
//     it is replaced while the Node is tainted (on the label), never removed.
//   - AnnotationNodeName: the Node's name when it is not the hostname; a stale
//     one goes.
//
// A drained Csibmnode matched only by address to an untainted Node is left as it
// is: more likely the removed node's address was handed to another Node than its
// taint removed, for a Node that limbo marked through its address had its name
// recorded in the same write, and is matched by that name from then on.
func syncCsibmnode(ctx context.Context, req plugin.Request, cn *csiNode, node *corev1.Node, by matchedBy, inScope, tainted bool) error {
	obj := cn.obj
	onLabel := node.Name == cn.hostname
	for range 3 {
		drained := wasDrained(obj)
		if by == byAddress && drained && !tainted {
			return nil
		}
		if inScope { // the nodeSelector names the Nodes whose taint is mirrored
			drained = tainted
		}
		labelled := obj.GetLabels()[LabelDrain] == DrainValue
		_, marked := obj.GetAnnotations()[AnnotationDrained]
		labels, annotations := map[string]any{}, map[string]any{}
		switch wantLabel := drained && onLabel; {
		case wantLabel && !labelled:
			labels[LabelDrain] = DrainValue
		case !wantLabel && labelled:
			labels[LabelDrain] = nil
		}
		switch wantMark := drained && !onLabel; {
		case wantMark && !marked:
			annotations[AnnotationDrained] = "true"
		case !wantMark && marked:
			annotations[AnnotationDrained] = nil
		}
		recorded, hasRecord := obj.GetAnnotations()[AnnotationNodeName]
		switch {
		case !onLabel && recorded != node.Name:
			annotations[AnnotationNodeName] = node.Name
		case onLabel && hasRecord:
			annotations[AnnotationNodeName] = nil
		}
		changes := map[string]any{}
		if len(labels) > 0 {
			changes["labels"] = labels
		}
		if len(annotations) > 0 {
			changes["annotations"] = annotations
		}
		if len(changes) == 0 {
			return nil
		}
		changes["resourceVersion"] = obj.GetResourceVersion()
		patch, err := json.Marshal(map[string]any{"metadata": changes})
		if err != nil {
			return err
		}
		err = req.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))
		if !apiconflict.Is(err) {
			if err != nil {
				return fmt.Errorf("label Csibmnode %s: %w", obj.GetName(), err)
			}
			return nil
		}
		if err := req.Reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("re-read Csibmnode %s: %w", obj.GetName(), err)
		}
	}
	return fmt.Errorf("label Csibmnode %s: it kept changing", obj.GetName())
}
