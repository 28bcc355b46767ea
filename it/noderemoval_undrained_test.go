package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// A Node deleted without its Csibmnode being labelled (never drained): a Warning
// event, the resource's message and a metric say so, and its resources are left
// alone.
func TestNodeRemovalUndrained(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1")
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{})
	waitNodeRemovalReady(t, b, "Csibmnodes") // the plugin ran
	deleteNode(t, n.name)

	waitEventContaining(t, b, "Warning", noderemoval.EventNodeRemovedUndrained, "Node "+n.name+" was deleted without")
	waitNodeRemovalReady(t, b, "deleted without the drain label, resources left alone: "+n.name)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return err
		}
		for _, f := range families {
			if f.GetName() != "limbo_node_removal_undrained_nodes" {
				continue
			}
			for _, m := range f.GetMetric() {
				if strings.Contains(m.String(), ns) && m.GetGauge().GetValue() == 1 {
					return nil
				}
			}
		}
		return fmt.Errorf("limbo_node_removal_undrained_nodes{namespace=%q} is not 1", ns)
	})
	// Past the delay, nothing was stamped or deleted.
	testenv.Consistently(t, 3*time.Second, func() error {
		for i, u := range n.live(t) {
			if u == nil {
				return fmt.Errorf("%s %s was deleted", n.objects[i].GetKind(), n.objects[i].GetName())
			}
			if err := notInLimbo(u); err != nil {
				return err
			}
		}
		return nil
	})
	noPendingDeletions(t, b)
}
