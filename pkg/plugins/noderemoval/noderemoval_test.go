package noderemoval

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugin/plugintest"
)

// The drain taint matches on key, value and effect (the operator's review caught
// a version that ignored the effect).
func TestHasTaint(t *testing.T) {
	node := func(taints ...corev1.Taint) *corev1.Node { return &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}} }
	drain := corev1.Taint{Key: LabelDrain, Value: DrainValue, Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"no taint", node(), false},
		{"the drain taint", node(corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoExecute}, drain), true},
		{"another effect", node(corev1.Taint{Key: LabelDrain, Value: DrainValue, Effect: corev1.TaintEffectNoExecute}), false},
		{"another value (maintenance)", node(corev1.Taint{Key: LabelDrain, Value: "planned-downtime", Effect: corev1.TaintEffectNoSchedule}), false},
	} {
		if got := hasTaint(tc.node, DefaultDrainTaint); got != tc.want {
			t.Errorf("%s: hasTaint = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The spec's schema, generated from Spec, as the Bundle reconciler checks it.
func TestSchema(t *testing.T) {
	plugintest.ExpectSpecs(t, New(Options{}), []plugintest.SpecCase{
		{Spec: `{}`},
		{Spec: `{"nodeSelector":{"matchLabels":{"pool":"storage"}},"drainTaint":{"key":"k","value":"v","effect":"NoExecute"},` +
			`"nodePodSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["csi-baremetal-node"]}]},"removeUndrained":true}`},
		{Spec: `{"drainTaint":{"key":"k","effect":"Sometimes"}}`, Want: `spec.drainTaint.effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
		{Spec: `{"drainTaint":{"value":"v","effect":"NoSchedule"}}`, Want: `spec.drainTaint.key: Required value`},
		{Spec: `{"removeUndrained":"yes"}`, Want: `spec.removeUndrained: Invalid value: "string": removeUndrained in body must be of type boolean: "string"`},
		{Spec: `{"nodeselector":{}}`, Want: `spec: Invalid value: "nodeselector": .nodeselector in body is a forbidden property`},
		// Selectors the schema lets through and the plugin's parse refuses (CheckSpec).
		{Spec: `{"nodeSelector":{"matchExpressions":[{"key":"pool","operator":"Near","values":["storage"]}]}}`,
			Want: `spec.nodeSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{Spec: `{"nodeSelector":{"matchExpressions":[{"key":"pool","operator":"In"}]}}`,
			Want: "spec.nodeSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"},
		{Spec: `{"nodeSelector":{"matchLabels":{"pool":"not a label value"}}}`,
			Want: `spec.nodeSelector.matchLabels: Invalid value: "not a label value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		// Every bad label is named, always in one order (matchLabels is a map).
		{Spec: `{"nodeSelector":{"matchLabels":{"z":"*","a":"*","":"x"}}}`,
			Want: `[spec.nodeSelector.matchLabels: Invalid value: "": name part must be non-empty, spec.nodeSelector.matchLabels: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), spec.nodeSelector.matchLabels: Invalid value: "*": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]`},
		{Spec: `{"nodePodSelector":{"matchExpressions":[{"key":"app","operator":"Exists","values":["x"]}]}}`,
			Want: "spec.nodePodSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
	})
}

// A selector the schema lets through but labels cannot parse is refused by
// parse itself, so also by Plan and MayDelete should the check have been skipped.
func TestParseBadSelector(t *testing.T) {
	if _, err := parse([]byte(`{"nodePodSelector":{"matchExpressions":[{"key":"app","operator":"Near"}]}}`)); err == nil {
		t.Error("parse accepted an unknown selector operator")
	}
	s, err := parse([]byte(`{}`))
	if err != nil || s.taint != DefaultDrainTaint || s.pods != nil {
		t.Errorf("defaults: %+v, %v", s, err)
	}
}

// A listing of no Nodes orphans nothing, even with removeUndrained: every
// Csibmnode would be judged gone, and an empty listing more likely means a
// broken one than a cluster without Nodes. The plugin reports what its Node
// listing returned (DesiredListed), and the inventory's safety rule refuses.
func TestPlanWithoutNodesOrphansNothing(t *testing.T) {
	c := fakeCluster(csibmnodeObj("w3-uuid", "w3", sharedIP, drained, nil), driveObj("w3-uuid"),
		csibmnodeObj("w4-uuid", "w4", "10.0.0.4", nil, nil), driveObj("w4-uuid"))
	res := mustPlan(t, c, `{"removeUndrained":true}`)
	objects, external, err := res.Inventory.Orphans()
	if !errors.Is(err, plugin.ErrEmptyDesired) || len(objects)+len(external) != 0 {
		t.Errorf("Orphans = %d objects, %d external items, %v; want none and %v", len(objects), len(external), err, plugin.ErrEmptyDesired)
	}
}
