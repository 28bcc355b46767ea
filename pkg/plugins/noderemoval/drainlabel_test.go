package noderemoval

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// inPool is n labelled pool=pool.
func inPool(n *corev1.Node, pool string) *corev1.Node {
	n.Labels = map[string]string{"pool": pool}
	return n
}

// The nodeSelector limits which Nodes' taint is mirrored, never what a Node that
// exists is: a Node outside it is not labelled, keeps a label it had (a Node
// relabelled out of scope), and its resources stay desired; a gone Node is judged
// whatever its labels were (docs/plugins/node-removal.md).
func TestNodeSelectorScopesTheDrainLabelOnly(t *testing.T) {
	const spec = `{"nodeSelector":{"matchLabels":{"pool":"storage"}}}`
	for _, tc := range []struct {
		name        string
		csibmnode   map[string]string // the Csibmnode's labels
		node        *corev1.Node      // nil: gone
		wantDesired bool
		wantLabel   bool
	}{
		{"in scope, tainted: labelled", nil, inPool(kubeNode("w1", "10.0.0.1", true), "storage"), true, true},
		{"out of scope, tainted: not labelled", nil, inPool(kubeNode("w1", "10.0.0.1", true), "web"), true, false},
		{"drained, then relabelled out of scope and untainted: the label is left as it is", drained, inPool(kubeNode("w1", "10.0.0.1", false), "web"), true, true},
		{"in scope, untainted: the label goes", drained, inPool(kubeNode("w1", "10.0.0.1", false), "storage"), true, false},
		{"gone, drained: removed whatever its pool was", drained, nil, false, true},
		{"gone, not drained: kept (removeUndrained is false)", nil, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{csibmnodeObj("w1-uuid", "w1", "10.0.0.1", tc.csibmnode, nil), driveObj("w1-uuid"),
				inPool(kubeNode("stays", "10.0.0.100", false), "storage")}
			if tc.node != nil {
				objs = append(objs, tc.node)
			}
			c := fakeCluster(objs...)
			res := mustPlan(t, c, spec)
			if desired, _ := judged(t, res, "w1-uuid"); desired != tc.wantDesired {
				t.Errorf("desired = %v, want %v (message %q)", desired, tc.wantDesired, res.Message)
			}
			if got := liveCsibmnode(t, c, "w1-uuid").GetLabels()[LabelDrain] == DrainValue; got != tc.wantLabel {
				t.Errorf("drain label present = %v, want %v", got, tc.wantLabel)
			}
		})
	}
}

// The drain label is patched with the resourceVersion it was decided on: a
// Csibmnode changed meanwhile (csi-baremetal writes its own labels) is read again
// and decided again, and its other labels are kept.
func TestDrainLabelRereadsOnConflict(t *testing.T) {
	base := fakeCluster(csibmnodeObj("w1-uuid", "w1", "10.0.0.1", nil, nil), driveObj("w1-uuid"), kubeNode("w1", "10.0.0.1", true))
	patches, conflicts := 0, 0
	c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patches == 0 {
				// csi-baremetal's own write lands between the read and the patch.
				cn := liveCsibmnode(t, c, "w1-uuid")
				cn.SetLabels(map[string]string{"csi-baremetal/owned": "true"})
				if err := c.Update(ctx, cn); err != nil {
					t.Fatal(err)
				}
			}
			patches++
			// The API server's own answer: the patch's resourceVersion is stale.
			err := c.Patch(ctx, obj, patch, opts...)
			if apierrors.IsConflict(err) {
				conflicts++
			}
			return err
		},
	})
	res := mustPlan(t, c, `{}`)
	if desired, _ := judged(t, res, "w1-uuid"); !desired {
		t.Errorf("w1's resources are not desired (message %q)", res.Message)
	}
	labels := liveCsibmnode(t, c, "w1-uuid").GetLabels()
	if labels[LabelDrain] != DrainValue || labels["csi-baremetal/owned"] != "true" {
		t.Errorf("labels = %v, want the drain label and csi-baremetal's own", labels)
	}
	if conflicts != 1 {
		t.Errorf("%d conflicts, want 1", conflicts)
	}
}

// The spec's drainTaint replaces the default one: a Node tainted with it is
// drained, one with the default taint is not.
func TestDrainTaintOfTheSpec(t *testing.T) {
	const spec = `{"drainTaint":{"key":"example.com/retire","effect":"NoExecute"}}`
	retire := kubeNode("w1", "10.0.0.1", false)
	retire.Spec.Taints = []corev1.Taint{{Key: "example.com/retire", Effect: corev1.TaintEffectNoExecute}}
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		wantLabel bool
	}{
		{"tainted with the spec's taint: labelled", retire, true},
		{"tainted with the default taint: not labelled", kubeNode("w1", "10.0.0.1", true), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCluster(csibmnodeObj("w1-uuid", "w1", "10.0.0.1", nil, nil), driveObj("w1-uuid"), tc.node)
			mustPlan(t, c, spec)
			if got := liveCsibmnode(t, c, "w1-uuid").GetLabels()[LabelDrain] == DrainValue; got != tc.wantLabel {
				t.Errorf("drain label present = %v, want %v", got, tc.wantLabel)
			}
		})
	}
}

// A label of another value (csi-baremetal's planned-downtime maintenance) is not
// limbo's: it is replaced while the Node is drain-tainted, and never removed.
func TestDrainLabelOfAnotherValue(t *testing.T) {
	downtime := map[string]string{LabelDrain: "planned-downtime"}
	for _, tc := range []struct {
		name    string
		tainted bool
		want    string
	}{
		{"tainted: drained", true, DrainValue},
		{"not tainted: left as it is", false, "planned-downtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCluster(csibmnodeObj("w1-uuid", "w1", "10.0.0.1", downtime, nil), driveObj("w1-uuid"), kubeNode("w1", "10.0.0.1", tc.tainted))
			mustPlan(t, c, `{}`)
			if got := liveCsibmnode(t, c, "w1-uuid").GetLabels()[LabelDrain]; got != tc.want {
				t.Errorf("%s = %q, want %q", LabelDrain, got, tc.want)
			}
		})
	}
}

// onlyTheOperatorsLabel fails t when Csibmnode cn carries the drain label while
// its hostname is not the name of the Node it was matched to (recorded in
// AnnotationNodeName): csi-baremetal's operator would look for a Node of the
// hostname, find none, and remove the records of a live node at once.
func onlyTheOperatorsLabel(t *testing.T, cn *unstructured.Unstructured) {
	t.Helper()
	if name := cn.GetAnnotations()[AnnotationNodeName]; name != "" && cn.GetLabels()[LabelDrain] == DrainValue {
		t.Errorf("Csibmnode %s of Node %s carries %s=%s: csi-baremetal's operator takes its hostname for its Node's name", cn.GetName(), name, LabelDrain, DrainValue)
	}
}
