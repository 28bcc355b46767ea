package noderemoval

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// Mirroring a Node's drain taint and name on its Csibmnode.

func hasTaint(node *corev1.Node, t Taint) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key == t.Key && taint.Value == t.Value && string(taint.Effect) == t.Effect {
			return true
		}
	}
	return false
}

// syncCsibmnode brings a matched Csibmnode in line with its Node, with a patch
// that touches only the drain label and AnnotationNodeName, guarded by the
// resourceVersion it decided on; a conflict re-reads and decides again.
//   - The drain label, for a Node in scope: set while the Node is tainted,
//     removed once it is not. A label of another value (planned-downtime) is
//     someone else's: it is replaced while the Node is tainted, never removed.
//   - AnnotationNodeName: the Node's name when it is not the hostname; a stale
//     one goes.
//
// A drained Csibmnode matched only by address to an untainted Node is left as it
// is: more likely the removed node's address was handed to another Node than its
// taint removed, for a Node that limbo labelled through its address had its name
// recorded in the same write, and is matched by that name from then on.
func syncCsibmnode(ctx context.Context, req plugin.Request, cn *csiNode, node *corev1.Node, by matchedBy, inScope, tainted bool) error {
	obj := cn.obj
	for range 3 {
		current := obj.GetLabels()[LabelDrain]
		if by == byAddress && current == DrainValue && !tainted {
			return nil
		}
		changes := map[string]any{}
		switch {
		case !inScope: // the nodeSelector names the Nodes whose taint is mirrored
		case tainted && current != DrainValue:
			changes["labels"] = map[string]any{LabelDrain: DrainValue}
		case !tainted && current == DrainValue:
			changes["labels"] = map[string]any{LabelDrain: nil}
		}
		recorded, hasRecord := obj.GetAnnotations()[AnnotationNodeName]
		switch {
		case node.Name != cn.hostname && recorded != node.Name:
			changes["annotations"] = map[string]any{AnnotationNodeName: node.Name}
		case node.Name == cn.hostname && hasRecord:
			changes["annotations"] = map[string]any{AnnotationNodeName: nil}
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
		if !apierrors.IsConflict(err) {
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
