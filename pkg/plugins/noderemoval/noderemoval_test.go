package noderemoval

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
			`"nodePodSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["csi-baremetal-node"]}]},"nodePodNamespace":"csi-baremetal","removeUndrained":true}`},
		{Spec: `{"nodePodNamespace":"csi"}`,
			Want: `spec.nodePodNamespace: Forbidden: nodePodNamespace without nodePodSelector selects no pods: set nodePodSelector too, or drop it`},
		{Spec: `{"nodePodSelector":{"matchLabels":{"app":"csi-baremetal-node"}},"nodePodNamespace":"CSI"}`,
			Want: `spec.nodePodNamespace: Invalid value: "CSI": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
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

// A removed node's resources are found by the field each kind holds its UUID in,
// and deleted in order: Drives, AvailableCapacities, LogicalVolumeGroups and
// Volumes (their finalizers cleared), the Csibmnode last, its finalizer kept.
func TestPlanOrdersTheResourcesOfANode(t *testing.T) {
	volume := resourceObj(KindVolume, "NodeId", "w3-uuid")
	volume.SetNamespace("default")
	misfiled := resourceObj(KindLogicalVolumeGroup, "NodeId", "w3-uuid") // not LogicalVolumeGroup's field
	misfiled.SetName("misfiled")
	c := fakeCluster(csibmnodeObj("w3-uuid", "w3", sharedIP, drained, nil), kubeNode("stays", "10.0.0.100", false),
		resourceObj(KindAvailableCapacity, "NodeId", "w3-uuid"), resourceObj(KindLogicalVolumeGroup, "Node", "w3-uuid"), volume, driveObj("w3-uuid"), misfiled)
	res := mustPlan(t, c, `{}`)
	var got []string
	for _, it := range res.Inventory.Objects {
		got = append(got, fmt.Sprintf("%d %s %s desired=%v clear=%v", it.Order, it.Object.GetObjectKind().GroupVersionKind().Kind, it.Object.GetName(), it.Desired, it.ClearFinalizers))
	}
	want := []string{
		"0 Drive w3-uuid-drive desired=false clear=[]",
		"1 AvailableCapacity w3-uuid-availablecapacity desired=false clear=[]",
		"2 LogicalVolumeGroup w3-uuid-logicalvolumegroup desired=false clear=[" + FinalizerLVG + "]",
		"3 Volume w3-uuid-volume desired=false clear=[" + FinalizerVolume + "]",
		"4 Node w3-uuid desired=false clear=[]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inventory:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Plan on a world that does not change gives the same result every time, item
// order, groups, message and events included: a Bundle's re-pass over it
// writes nothing. The first plan of a Plugin may differ from the next (it
// writes the drain labels and node names, and tells each undrained Node once);
// from the second on, nothing may. The world holds a Csibmnode of each kind of
// judgement, and two of one hostname (a node replaced under its name).
func TestPlanOfAnUnchangedWorldIsIdentical(t *testing.T) {
	c := fakeCluster(
		csibmnodeObj("w1-uuid", "w1", "10.0.0.1", nil, nil), driveObj("w1-uuid"), kubeNode("w1", "10.0.0.1", true),
		csibmnodeObj("w2-uuid", "w2", "10.0.0.2", drained, nil), driveObj("w2-uuid"), kubeNode("w2", "10.0.0.2", false),
		csibmnodeObj("w3-uuid", "w3", sharedIP, drained, nil), driveObj("w3-uuid"),
		csibmnodeObj("w4-uuid", "w4", "10.0.0.4", nil, nil), driveObj("w4-uuid"),
		csibmnodeObj("w5-uuid", "w5", "10.0.0.5", nil, nil), csibmnodeObj("w5-copy", "w5b", "10.0.0.55", nil, nil),
		csibmnodeObj("w7-uuid", "w7", "10.0.0.7", nil, nil), driveObj("w7-uuid"), kubeNode("w7.example.com", "10.0.0.7", false),
		csibmnodeObj("w8-old", "w8", "10.0.0.8", drained, nil), driveObj("w8-old"),
		csibmnodeObj("w8-new", "w8", "10.0.0.8", nil, nil), driveObj("w8-new"), kubeNode("w8", "10.0.0.8", false),
		csibmnodeObj("no-host", "", "", nil, nil),
	)
	// Two Csibmnodes that carry one UUID: both in doubt.
	copyOfW5 := liveCsibmnode(t, c, "w5-copy")
	if err := unstructured.SetNestedField(copyOfW5.Object, "w5-uuid", "spec", "UUID"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(context.Background(), copyOfW5); err != nil {
		t.Fatal(err)
	}
	p := New(Options{})
	req := testRequest(c, `{}`)
	if _, err := p.Plan(context.Background(), req); err != nil {
		t.Fatalf("first plan: %v", err)
	}
	second, err := p.Plan(context.Background(), req)
	if err != nil {
		t.Fatalf("second plan: %v", err)
	}
	for _, want := range []string{"removed (in limbo)", "deleted without the drain label", "Node in doubt", "not judged"} {
		if !strings.Contains(second.Message, want) {
			t.Fatalf("message %q lacks %q: the world misses a judgement", second.Message, want)
		}
	}
	for i := range 20 {
		again, err := p.Plan(context.Background(), req)
		if err != nil {
			t.Fatalf("plan %d: %v", i+3, err)
		}
		if !reflect.DeepEqual(again, second) {
			t.Fatalf("plan %d of the same world differs from the second:\n%+v\n%+v", i+3, second, again)
		}
	}
}
