package it

import (
	"testing"
)

// removeUndrained: true also removes the resources of a Node deleted without
// the drain label.
func TestNodeRemovalRemoveUndrained(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1")
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{"removeUndrained": true})
	waitNodeRemovalReady(t, b, "Csibmnodes")
	deleteNode(t, n.name)

	n.waitAllInLimbo(t, b)
	for _, o := range n.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
}
