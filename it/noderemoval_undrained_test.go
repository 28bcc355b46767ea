package it

import (
	"fmt"
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
		if v, ok, err := undrainedSeries(ns); err != nil || !ok || v != 1 {
			return fmt.Errorf("limbo_node_removal_undrained_nodes{namespace=%q} = %v (present: %v, %v), want 1", ns, v, ok, err)
		}
		return nil
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

	// The resource leaves the Bundle: its series goes with it (an alert on it
	// would keep firing for a resource that is gone).
	updateBundle(t, b, objectResource(t, "settings", configMap("settings", nil, nil)))
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if v, ok, err := undrainedSeries(ns); err != nil || ok {
			return fmt.Errorf("limbo_node_removal_undrained_nodes{namespace=%q} = %v (present: %v, %v), want no series", ns, v, ok, err)
		}
		return nil
	})
}

// undrainedSeries is the value of the undrained-nodes gauge of namespace ns,
// and whether it has a series.
func undrainedSeries(ns string) (float64, bool, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, false, err
	}
	for _, f := range families {
		if f.GetName() != "limbo_node_removal_undrained_nodes" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					return m.GetGauge().GetValue(), true, nil
				}
			}
		}
	}
	return 0, false, nil
}
