package noderemoval

import (
	"cmp"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// The IP the tests' Csibmnodes and Nodes share when they are meant to.
const sharedIP = "10.0.0.3"

// csibmnodeObj is a Csibmnode named uuid with its hostname and InternalIP, and
// the labels and annotations it carries.
func csibmnodeObj(uuid, hostname, ip string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"UUID": uuid, "Addresses": map[string]any{"Hostname": hostname, "InternalIP": ip},
	}}}
	u.SetGroupVersionKind(GVK(KindCsibmnode))
	u.SetName(uuid)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetFinalizers([]string{FinalizerCsibmnode})
	return u
}

// driveObj is a Drive of the Csibmnode whose UUID is uuid.
func driveObj(uuid string) *unstructured.Unstructured {
	return resourceObj(KindDrive, "NodeId", uuid)
}

// resourceObj is a csi-baremetal resource of kind named uuid-<kind>, whose spec
// field holds the UUID of its Csibmnode.
func resourceObj(kind, field, uuid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{field: uuid}}}
	u.SetGroupVersionKind(GVK(kind))
	u.SetName(uuid + "-" + strings.ToLower(kind))
	return u
}

// kubeNode is a Node with its InternalIP ("" for none), drain-tainted or not.
func kubeNode(name, ip string, drained bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	}
	if drained {
		n.Spec.Taints = []corev1.Taint{{Key: LabelDrain, Value: DrainValue, Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

// nodePod is a pod bound to node, labelled app=app.
func nodePod(name, node, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "csi", Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: node}}
}

var drained = map[string]string{LabelDrain: DrainValue}

// withAddress is node with one more address.
func withAddress(node *corev1.Node, typ corev1.NodeAddressType, address string) *corev1.Node {
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: typ, Address: address})
	return node
}

// fakeCluster is an API server holding objs, with the pods' spec.nodeName
// field selector the gate uses.
func fakeCluster(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
}

func testRequest(c client.Client, spec string) plugin.Request {
	return plugin.Request{Bundle: &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "csi", Name: "nodes", UID: "u1"}},
		Resource: "node-removal", Spec: []byte(spec), Client: c, Reader: c}
}

// mustPlan runs Plan with a new Plugin each time: what Plan knows of a node
// must survive a controller restart.
func mustPlan(t *testing.T, c client.Client, spec string) *plugin.Result {
	t.Helper()
	res, err := New(Options{}).Plan(context.Background(), testRequest(c, spec))
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return res
}

// judged are the inventory's items of the Csibmnode whose UUID is uuid: whether
// they are desired (all must agree) and their group.
func judged(t *testing.T, res *plugin.Result, uuid string) (desired bool, group string) {
	t.Helper()
	var seen []plugin.ObjectItem
	for _, it := range res.Inventory.Objects {
		if it.Object.GetName() == uuid || it.Object.GetName() == uuid+"-drive" {
			seen = append(seen, it)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("inventory has %d items of Csibmnode %s, want its Csibmnode and its Drive", len(seen), uuid)
	}
	if seen[0].Desired != seen[1].Desired || seen[0].Group != seen[1].Group {
		t.Fatalf("the items of Csibmnode %s are judged apart: %+v", uuid, seen)
	}
	return seen[0].Desired, seen[0].Group
}

func liveCsibmnode(t *testing.T, c client.Client, uuid string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK(KindCsibmnode))
	if err := c.Get(context.Background(), client.ObjectKey{Name: uuid}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// A Csibmnode is matched to its Node by hostname, by the Node name recorded on
// it, and else by InternalIP only when that is unambiguous. The address of a
// removed Node handed to a new one (DHCP, a hardware swap) must not bring the
// removed node's resources back or strip its drain label; an FQDN Node name
// with the Csibmnode's short hostname still matches.
func TestPlanMatchesCsibmnodeToItsNode(t *testing.T) {
	w3 := func(labels, annotations map[string]string) client.Object {
		return csibmnodeObj("w3-uuid", "w3", sharedIP, labels, annotations)
	}
	inLimbo := map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2024-01-01T00:00:00Z"}
	for _, tc := range []struct {
		name string
		spec string
		objs []client.Object
		// What Plan decides of Csibmnode w3-uuid and leaves on it.
		wantDesired  bool
		wantLabel    bool
		wantNodeName string // AnnotationNodeName; "" absent
	}{{
		name: "the address of removed w3 reused by w9, which has its own Csibmnode",
		objs: []client.Object{w3(drained, nil), csibmnodeObj("w9-uuid", "w9", sharedIP, nil, nil), kubeNode("w9", sharedIP, false)},
		// w3 stays removed, still drained.
		wantDesired: false, wantLabel: true,
	}, {
		name:        "the address reused by w9.example.com, whose Csibmnode has its short name",
		objs:        []client.Object{w3(drained, nil), csibmnodeObj("w9-uuid", "w9", sharedIP, nil, nil), kubeNode("w9.example.com", sharedIP, false)},
		wantDesired: false, wantLabel: true,
	}, {
		name: "the address reused by w9 whose Csibmnode is not there yet, w3 already in limbo",
		// Only a Node of its name brings a Csibmnode in limbo back.
		objs:        []client.Object{w3(drained, inLimbo), kubeNode("w9", sharedIP, false)},
		wantDesired: false, wantLabel: true,
	}, {
		name: "the address reused by untainted w9 whose Csibmnode is not there yet, w3 not in limbo yet",
		// It might be w3 under another name: left desired for now, but a drained
		// Csibmnode is never undrained, nor bound to that Node, by its address.
		objs:        []client.Object{w3(drained, nil), kubeNode("w9", sharedIP, false)},
		wantDesired: true, wantLabel: true,
	}, {
		name: "the address reused by w9.example.com, whose Csibmnode recorded that name",
		objs: []client.Object{w3(drained, nil), csibmnodeObj("w9-uuid", "node-9", sharedIP, nil, map[string]string{AnnotationNodeName: "w9.example.com"}),
			kubeNode("w9.example.com", sharedIP, false)},
		wantDesired: false, wantLabel: true,
	}, {
		name:        "two Nodes with the address",
		objs:        []client.Object{w3(drained, nil), kubeNode("a", sharedIP, false), kubeNode("b", sharedIP, false)},
		wantDesired: false, wantLabel: true,
	}, {
		// Only an InternalIP is an address a Csibmnode goes by: another Node's
		// ExternalIP of the same value makes no second candidate.
		name:        "FQDN Node name, drained, another Node's ExternalIP the same",
		objs:        []client.Object{w3(drained, nil), kubeNode("w3.example.com", sharedIP, true), withAddress(kubeNode("gw", "", false), corev1.NodeExternalIP, sharedIP)},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name:        "FQDN Node name, drained, its InternalIP listed twice",
		objs:        []client.Object{w3(drained, nil), withAddress(kubeNode("w3.example.com", sharedIP, true), corev1.NodeInternalIP, sharedIP)},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		// planned-downtime is csi-baremetal's maintenance, not a drain for removal.
		name:        "the Node gone, its Csibmnode labelled with another value",
		objs:        []client.Object{w3(map[string]string{LabelDrain: "planned-downtime"}, nil)},
		wantDesired: true,
	}, {
		name:        "two Nodes with the address, removeUndrained",
		spec:        `{"removeUndrained":true}`,
		objs:        []client.Object{w3(nil, nil), kubeNode("a", sharedIP, false), kubeNode("b", sharedIP, false)},
		wantDesired: false,
	}, {
		name:        "FQDN Node name: matched by address, its name recorded",
		objs:        []client.Object{w3(nil, nil), kubeNode("w3.example.com", sharedIP, false)},
		wantDesired: true, wantNodeName: "w3.example.com",
	}, {
		name:        "FQDN Node name, drained: labelled, its name recorded",
		objs:        []client.Object{w3(nil, nil), kubeNode("w3.example.com", sharedIP, true)},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name:        "FQDN Node name, drained and labelled before its name was recorded",
		objs:        []client.Object{w3(drained, nil), kubeNode("w3.example.com", sharedIP, true)},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name:        "FQDN Node name recorded, the taint gone: the label goes",
		objs:        []client.Object{w3(drained, map[string]string{AnnotationNodeName: "w3.example.com"}), kubeNode("w3.example.com", "", false)},
		wantDesired: true, wantNodeName: "w3.example.com",
	}, {
		name:        "FQDN Node name recorded, the Node gone, another Node on the address",
		objs:        []client.Object{w3(nil, map[string]string{AnnotationNodeName: "w3.example.com", AnnotationDrained: "true"}), kubeNode("w9", sharedIP, false)},
		wantDesired: false, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name:        "FQDN Node name recorded, the Node back under that name",
		objs:        []client.Object{w3(drained, map[string]string{AnnotationNodeName: "w3.example.com"}), kubeNode("w3.example.com", "", true)},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name:        "the Node under the hostname: a stale recorded name goes",
		objs:        []client.Object{w3(nil, map[string]string{AnnotationNodeName: "w3.example.com"}), kubeNode("w3", sharedIP, false)},
		wantDesired: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if spec == "" {
				spec = `{}`
			}
			objs := append([]client.Object{driveObj("w3-uuid"), kubeNode("stays", "10.0.0.100", false)}, tc.objs...)
			c := fakeCluster(objs...)
			res := mustPlan(t, c, spec)
			if desired, _ := judged(t, res, "w3-uuid"); desired != tc.wantDesired {
				t.Errorf("w3's resources desired = %v, want %v (message %q)", desired, tc.wantDesired, res.Message)
			}
			live := liveCsibmnode(t, c, "w3-uuid")
			if got := wasDrained(live); got != tc.wantLabel {
				t.Errorf("w3 drained = %v (labels %v, annotations %v), want %v", got, live.GetLabels(), live.GetAnnotations(), tc.wantLabel)
			}
			onlyTheOperatorsLabel(t, live)
			if got := live.GetAnnotations()[AnnotationNodeName]; got != tc.wantNodeName {
				t.Errorf("w3's %s = %q, want %q", AnnotationNodeName, got, tc.wantNodeName)
			}
		})
	}
}

// The gate of a removed node checks every name the node went by: a
// csi-baremetal-node pod is bound to the Node's name (an FQDN), which need not
// be the Csibmnode's hostname. The name is learnt while the Node exists, and
// kept on the Csibmnode for after the Node is gone and the controller restarted.
func TestGateHoldsForAPodBoundToTheNodeName(t *testing.T) {
	const spec = `{"nodePodSelector":{"matchLabels":{"app":"csi-baremetal-node"}}}`
	for _, tc := range []struct {
		name     string
		pods     []client.Object
		wantHold string // "" allows
	}{
		{"a node pod bound to the FQDN Node name", []client.Object{nodePod("csi-node", "w3.example.com", "csi-baremetal-node")},
			"pod csi/csi-node (nodePodSelector) is still bound to node w3.example.com"},
		{"a node pod bound to the hostname", []client.Object{nodePod("csi-node", "w3", "csi-baremetal-node")},
			"pod csi/csi-node (nodePodSelector) is still bound to node w3"},
		{"another pod on the node", []client.Object{nodePod("web", "w3.example.com", "web")}, ""},
		{"a node pod on another node", []client.Object{nodePod("csi-node", "w9", "csi-baremetal-node")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fqdn := kubeNode("w3.example.com", sharedIP, true)
			c := fakeCluster(append([]client.Object{csibmnodeObj("w3-uuid", "w3", sharedIP, nil, nil), driveObj("w3-uuid"), fqdn,
				kubeNode("stays", "10.0.0.100", false)}, tc.pods...)...)
			mustPlan(t, c, spec) // the Node exists: drained, matched by its address
			if err := c.Delete(context.Background(), fqdn); err != nil {
				t.Fatal(err)
			}
			res := mustPlan(t, c, spec)
			desired, group := judged(t, res, "w3-uuid")
			if desired {
				t.Fatalf("w3's resources are desired after its Node was deleted: %q", res.Message)
			}
			hold, err := New(Options{}).MayDelete(context.Background(), testRequest(c, spec), group)
			if err != nil {
				t.Fatal(err)
			}
			if hold != tc.wantHold {
				t.Errorf("MayDelete(%q) = %q, want %q", group, hold, tc.wantHold)
			}
		})
	}
}

// The Node back under any name the node went by is a Node that exists: the gate
// holds even when the plan that saw it has not run yet.
func TestGateHoldsWhileTheNodeIsBack(t *testing.T) {
	c := fakeCluster(csibmnodeObj("w3-uuid", "w3", sharedIP, drained, map[string]string{AnnotationNodeName: "w3.example.com"}),
		driveObj("w3-uuid"), kubeNode("stays", "10.0.0.100", false))
	_, group := judged(t, mustPlan(t, c, `{}`), "w3-uuid")
	if err := c.Create(context.Background(), kubeNode("w3.example.com", sharedIP, true)); err != nil {
		t.Fatal(err)
	}
	hold, err := New(Options{}).MayDelete(context.Background(), testRequest(c, `{}`), group)
	if err != nil || !strings.Contains(hold, "Node w3.example.com exists again") {
		t.Errorf("MayDelete(%q) = %q, %v; want held by the Node w3.example.com", group, hold, err)
	}
}

// The gate read fresh for a group: a pod bound to any name the node went by
// holds it (a recorded name need not be the hostname under a domain), and a
// Node that cannot be read is an error, never taken for gone. With
// nodePodNamespace, only a pod of that namespace holds: a tenant who may create
// pods in its own namespace, labelled as csi-baremetal's and bound to the
// removed node's name (the API server checks neither), held the node's
// resources for good otherwise.
func TestMayDeleteOfAGroup(t *testing.T) {
	const spec = `{"nodePodSelector":{"matchLabels":{"app":"csi-baremetal-node"}}}`
	const inCSI = `{"nodePodSelector":{"matchLabels":{"app":"csi-baremetal-node"}},"nodePodNamespace":"csi"}`
	tenantPod := nodePod("fake", "storage-a", "csi-baremetal-node")
	tenantPod.Namespace = "team-b"
	for _, tc := range []struct {
		name     string
		spec     string // default spec
		group    string
		pod      *corev1.Pod
		failGet  string // the Node whose read fails
		wantHold string
		wantErr  bool
	}{
		{name: "nodePodNamespace: a tenant's pod bound to the recorded name does not hold", spec: inCSI,
			group: "w3,storage-a/w3-uuid", pod: tenantPod},
		{name: "nodePodNamespace: a node pod of that namespace holds", spec: inCSI,
			group: "w3,storage-a/w3-uuid", pod: nodePod("csi-node", "storage-a", "csi-baremetal-node"),
			wantHold: "pod csi/csi-node (nodePodSelector) is still bound to node storage-a"},
		{name: "no nodePodNamespace: a pod of any namespace holds", group: "w3,storage-a/w3-uuid", pod: tenantPod,
			wantHold: "pod team-b/fake (nodePodSelector) is still bound to node storage-a"},
		{name: "a node pod bound to the recorded name", group: "w3,storage-a/w3-uuid", pod: nodePod("csi-node", "storage-a", "csi-baremetal-node"),
			wantHold: "pod csi/csi-node (nodePodSelector) is still bound to node storage-a"},
		{name: "no node pod", group: "w3,storage-a/w3-uuid", pod: nodePod("csi-node", "w9", "csi-baremetal-node")},
		{name: "the Node of the hostname unreadable", group: "w3,storage-a/w3-uuid", pod: nodePod("csi-node", "w9", "csi-baremetal-node"),
			failGet: "w3", wantErr: true},
		{name: "the Node of the recorded name unreadable", group: "w3,storage-a/w3-uuid", pod: nodePod("csi-node", "w9", "csi-baremetal-node"),
			failGet: "storage-a", wantErr: true},
		{name: "a node pod on the hostname under a domain, that Node unreadable", group: "w3/w3-uuid",
			pod: nodePod("csi-node", "w3.example.com", "csi-baremetal-node"), failGet: "w3.example.com", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := fakeCluster(tc.pod, kubeNode("stays", "10.0.0.100", false))
			c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.Node); ok && key.Name == tc.failGet {
						return apierrors.NewServiceUnavailable("etcd is slow")
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			spec := cmp.Or(tc.spec, spec)
			hold, err := New(Options{}).MayDelete(context.Background(), testRequest(c, spec), tc.group)
			if hold != tc.wantHold || (err != nil) != tc.wantErr {
				t.Errorf("MayDelete(%q) = %q, %v; want %q, error %v", tc.group, hold, err, tc.wantHold, tc.wantErr)
			}
		})
	}
}

// withCSIUUID is node carrying csi-baremetal's annotation naming the Csibmnode
// whose UUID is uuid.
func withCSIUUID(node *corev1.Node, uuid string) *corev1.Node {
	node.Annotations = map[string]string{AnnotationCSINodeUUID: uuid}
	return node
}

// csi-baremetal's annotation on a Node (nodes.csi-baremetal.dell.com/uuid)
// names the Csibmnode it matched to it: that Node is the Csibmnode's, whatever
// its name and addresses (FQDN Node names never recorded, an InternalIP that
// changed), even with removeUndrained: true. A Node of its name or address whose
// annotation names another UUID keeps it too (fail closed) but is not mirrored
// on it; the annotation never makes a Csibmnode gone.
func TestPlanMatchesCsibmnodeByCSIBaremetalUUID(t *testing.T) {
	const movedIP = "10.0.0.9" // the Node's InternalIP now; the Csibmnode still has sharedIP
	w3 := func(labels, annotations map[string]string) client.Object {
		return csibmnodeObj("w3-uuid", "w3", sharedIP, labels, annotations)
	}
	inLimbo := map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2024-01-01T00:00:00Z"}
	for _, tc := range []struct {
		name string
		spec string // default {"removeUndrained":true}
		objs []client.Object
		// What Plan decides of Csibmnode w3-uuid and leaves on it.
		wantDesired  bool
		wantGroup    string // "" not checked
		wantLabel    bool
		wantNodeName string // AnnotationNodeName; "" absent
		wantMessage  string // a part of the resource's message; "" not checked
	}{{
		name:        "FQDN Node name never recorded, its InternalIP changed: matched by UUID, its name recorded",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("w3.example.com", movedIP, false), "w3-uuid")},
		wantDesired: true, wantGroup: "w3,w3.example.com/w3-uuid", wantNodeName: "w3.example.com",
	}, {
		name:        "the same Node drain-tainted: labelled",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("w3.example.com", movedIP, true), "w3-uuid")},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name: "the same Node labelled, its taint gone: the label goes (a UUID is as sure as a name)",
		objs: []client.Object{w3(drained, nil), withCSIUUID(kubeNode("w3.example.com", movedIP, false), "w3-uuid")},
		spec: `{}`, wantDesired: true, wantNodeName: "w3.example.com",
	}, {
		name:        "in limbo, back under another name with its UUID: cancelled",
		objs:        []client.Object{w3(drained, inLimbo), withCSIUUID(kubeNode("w3-rebuilt", movedIP, true), "w3-uuid")},
		spec:        `{}`,
		wantDesired: true, wantLabel: true, wantNodeName: "w3-rebuilt",
	}, {
		name: "UUID on w3.example.com, name on w3 (no annotation): w3.example.com is its Node",
		objs: []client.Object{w3(nil, nil), kubeNode("w3", sharedIP, false), withCSIUUID(kubeNode("w3.example.com", movedIP, true), "w3-uuid")},
		// The drain taint mirrored is w3.example.com's, and both names are gated.
		wantDesired: true, wantGroup: "w3,w3.example.com/w3-uuid", wantLabel: true, wantNodeName: "w3.example.com",
	}, {
		name: "UUID on w3.example.com, name on w3 which carries another UUID: w3's taint is not mirrored",
		objs: []client.Object{w3(drained, nil), withCSIUUID(kubeNode("w3", sharedIP, true), "w9-uuid"),
			withCSIUUID(kubeNode("w3.example.com", movedIP, false), "w3-uuid")},
		wantDesired: true, wantNodeName: "w3.example.com",
	}, {
		name:        "the Node of its hostname carries another UUID: kept, nothing written",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("w3", sharedIP, true), "w9-uuid")},
		wantDesired: true, wantGroup: "w3/w3-uuid",
		wantMessage: "Node in doubt, resources kept and Csibmnode left as it is: w3 (Node w3 carries nodes.csi-baremetal.dell.com/uuid=w9-uuid)",
	}, {
		name: "the Node of its recorded name carries another UUID, untainted: kept, drained mark and record left",
		objs: []client.Object{w3(nil, map[string]string{AnnotationNodeName: "w3.example.com", AnnotationDrained: "true"}),
			withCSIUUID(kubeNode("w3.example.com", movedIP, false), "w9-uuid")},
		wantDesired: true, wantLabel: true, wantNodeName: "w3.example.com",
		wantMessage: "w3.example.com (Node w3.example.com carries nodes.csi-baremetal.dell.com/uuid=w9-uuid)",
	}, {
		name:        "the one Node of its address carries another UUID whose Csibmnode is not listed: kept, nothing written",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("w9", sharedIP, true), "w9-uuid")},
		wantDesired: true, wantGroup: "w3,w9/w3-uuid",
		wantMessage: "w3 (Node w9 carries nodes.csi-baremetal.dell.com/uuid=w9-uuid)",
	}, {
		name: "the address reused by w9 with its own Csibmnode's UUID: w3 still removed",
		objs: []client.Object{w3(drained, nil), csibmnodeObj("w9-uuid", "w9", sharedIP, nil, nil),
			withCSIUUID(kubeNode("w9", sharedIP, false), "w9-uuid")},
		spec:        `{}`,
		wantDesired: false, wantGroup: "w3/w3-uuid", wantLabel: true,
	}, {
		name:        "two Nodes carry its UUID: kept, nothing written",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("b", movedIP, true), "w3-uuid"), withCSIUUID(kubeNode("a", "", true), "w3-uuid")},
		wantDesired: true,
		wantMessage: "w3 (Nodes a, b all carry nodes.csi-baremetal.dell.com/uuid=w3-uuid)",
	}, {
		name:        "only another Node's UUID, no name or address of its own: removed",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("w9", movedIP, false), "w9-uuid")},
		wantDesired: false, wantGroup: "w3/w3-uuid",
	}, {
		name:        "the Node gone, its recorded name its hostname: one name",
		objs:        []client.Object{w3(nil, map[string]string{AnnotationNodeName: "w3"})},
		wantDesired: false, wantGroup: "w3/w3-uuid", wantNodeName: "w3",
	}, {
		name:        "an empty annotation is none: matched by address",
		objs:        []client.Object{w3(nil, nil), withCSIUUID(kubeNode("w3.example.com", sharedIP, false), "")},
		wantDesired: true, wantNodeName: "w3.example.com",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if spec == "" {
				spec = `{"removeUndrained":true}`
			}
			objs := append([]client.Object{driveObj("w3-uuid"), kubeNode("stays", "10.0.0.100", false)}, tc.objs...)
			c := fakeCluster(objs...)
			res := mustPlan(t, c, spec)
			desired, group := judged(t, res, "w3-uuid")
			if desired != tc.wantDesired {
				t.Errorf("w3's resources desired = %v, want %v (message %q)", desired, tc.wantDesired, res.Message)
			}
			if tc.wantGroup != "" && group != tc.wantGroup {
				t.Errorf("w3's group = %q, want %q", group, tc.wantGroup)
			}
			if tc.wantMessage != "" && !strings.Contains(res.Message, tc.wantMessage) {
				t.Errorf("message %q, want it to say %q", res.Message, tc.wantMessage)
			}
			live := liveCsibmnode(t, c, "w3-uuid")
			if got := wasDrained(live); got != tc.wantLabel {
				t.Errorf("w3 drained = %v (labels %v, annotations %v), want %v", got, live.GetLabels(), live.GetAnnotations(), tc.wantLabel)
			}
			onlyTheOperatorsLabel(t, live)
			if got := live.GetAnnotations()[AnnotationNodeName]; got != tc.wantNodeName {
				t.Errorf("w3's %s = %q, want %q", AnnotationNodeName, got, tc.wantNodeName)
			}
		})
	}
}

// The gate of a node that csi-baremetal matched by UUID to a Node of another name
// (w3.example.com for hostname w3) checks that name: recorded on the Csibmnode
// while the Node exists, and, when it never could be (the write refused), the
// hostname under any domain, unless a Node of that name is another Csibmnode's
// (csi-baremetal's UUID annotation). A Node carrying the node's UUID again,
// under any name, holds it too.
func TestGateHoldsUnderTheNameOfTheUUIDMatch(t *testing.T) {
	const spec = `{"removeUndrained":true,"nodePodSelector":{"matchLabels":{"app":"csi-baremetal-node"}}}`
	for _, tc := range []struct {
		name string
		// refuse refuses every patch of Plan (the name is never recorded).
		refuse bool
		objs   []client.Object // pods, other Nodes
		// back is created after the Node was deleted and the plan judged it gone.
		back     client.Object
		wantHold string // "" allows
	}{{
		name:     "a node pod bound to the Node's name, recorded",
		objs:     []client.Object{nodePod("csi-node", "w3.example.com", "csi-baremetal-node")},
		wantHold: "pod csi/csi-node (nodePodSelector) is still bound to node w3.example.com",
	}, {
		name: "a node pod bound to the Node's name, never recorded", refuse: true,
		objs:     []client.Object{nodePod("csi-node", "w3.example.com", "csi-baremetal-node")},
		wantHold: "pod csi/csi-node (nodePodSelector) is still bound to node w3.example.com",
	}, {
		name: "the name never recorded, two node pods on the hostname", refuse: true,
		objs:     []client.Object{nodePod("csi-node-a", "w3", "csi-baremetal-node"), nodePod("csi-node-b", "w3", "csi-baremetal-node")},
		wantHold: "pod csi/csi-node-a (nodePodSelector) is still bound to node w3 (and 1 more)",
	}, {
		name: "the name never recorded, a node pod on w3.other.example, another Csibmnode's Node", refuse: true,
		objs: []client.Object{withCSIUUID(kubeNode("w3.other.example", "10.0.0.50", false), "other-uuid"), nodePod("csi-node", "w3.other.example", "csi-baremetal-node")},
	}, {
		// Tied to no Csibmnode: it may be w3 back under its FQDN (its UUID
		// unreadable to limbo, its name never recorded). Before, it let w3's
		// resources go.
		name: "the name never recorded, a node pod on w3.other.example, a Node tied to no Csibmnode", refuse: true,
		objs:     []client.Object{kubeNode("w3.other.example", "10.0.0.50", false), nodePod("csi-node", "w3.other.example", "csi-baremetal-node")},
		wantHold: "pod csi/csi-node (nodePodSelector) is still bound to node w3.other.example",
	}, {
		name: "the name never recorded, a node pod on w30.example.com", refuse: true,
		objs: []client.Object{nodePod("csi-node", "w30.example.com", "csi-baremetal-node")},
	}, {
		name:     "the Node back under another name, carrying its UUID",
		back:     withCSIUUID(kubeNode("w3-rebuilt", "10.0.0.10", false), "w3-uuid"),
		wantHold: "Node w3-rebuilt exists again (nodes.csi-baremetal.dell.com/uuid=w3-uuid)",
	}, {
		name: "another pod on the node",
		objs: []client.Object{nodePod("web", "w3.example.com", "web")},
	}, {
		name: "a node pod on another node",
		objs: []client.Object{nodePod("csi-node", "w9", "csi-baremetal-node")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fqdn := withCSIUUID(kubeNode("w3.example.com", "10.0.0.9", true), "w3-uuid")
			c := fakeCluster(append([]client.Object{csibmnodeObj("w3-uuid", "w3", sharedIP, nil, nil), driveObj("w3-uuid"), fqdn,
				kubeNode("stays", "10.0.0.100", false)}, tc.objs...)...)
			planner := c
			if tc.refuse {
				planner = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
					Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
						return apierrors.NewForbidden(schema.GroupResource{Group: Group, Resource: "nodes"}, "w3-uuid", nil)
					},
				})
			}
			// The Node exists: matched by its UUID, not by its name or address.
			res := mustPlan(t, planner, spec)
			if desired, group := judged(t, res, "w3-uuid"); !desired || group != "w3,w3.example.com/w3-uuid" {
				t.Fatalf("w3 while its Node runs: desired %v, group %q (message %q)", desired, group, res.Message)
			}
			if err := c.Delete(context.Background(), fqdn); err != nil {
				t.Fatal(err)
			}
			res = mustPlan(t, planner, spec)
			desired, group := judged(t, res, "w3-uuid")
			if desired {
				t.Fatalf("w3's resources are desired after its Node was deleted: %q", res.Message)
			}
			if tc.back != nil {
				if err := c.Create(context.Background(), tc.back); err != nil {
					t.Fatal(err)
				}
			}
			hold, err := New(Options{}).MayDelete(context.Background(), testRequest(c, spec), group)
			if err != nil {
				t.Fatal(err)
			}
			if hold != tc.wantHold {
				t.Errorf("MayDelete(%q) = %q, want %q", group, hold, tc.wantHold)
			}
		})
	}
}

// Two Csibmnodes that carry one UUID (a hand-made copy, a restore) leave in
// doubt whose the UUID's Drives, Volumes, ... are: the resources went with the
// last one listed, and a stale drained copy whose Node is gone took a live
// node's Drive with it into limbo. Every item of both is kept, neither is
// labelled, and the message says why. A Csibmnode without a UUID or hostname is
// not judged, and the message names it (before, it was left out unsaid).
func TestPlanKeepsCsibmnodesSharingAUUID(t *testing.T) {
	live := csibmnodeObj("shared", "w1", "10.0.0.1", nil, nil)
	live.SetName("a-live")
	stale := csibmnodeObj("shared", "w1-old", "10.0.0.9", drained, nil)
	stale.SetName("b-stale")
	nameless := csibmnodeObj("nameless", "", "10.0.0.3", drained, nil)
	c := fakeCluster(live, stale, nameless, driveObj("shared"), kubeNode("w1", "10.0.0.1", true))
	res := mustPlan(t, c, `{"removeUndrained":true}`)
	for _, it := range res.Inventory.Objects {
		if !it.Desired {
			t.Errorf("%s %s is an orphan; want every item of a shared UUID kept", it.Object.GetObjectKind().GroupVersionKind().Kind, it.Object.GetName())
		}
	}
	if n := len(res.Inventory.Objects); n != 3 {
		t.Errorf("%d items, want both Csibmnodes and the Drive", n)
	}
	for _, want := range []string{"w1 (its UUID shared is another Csibmnode's too)", "w1-old (its UUID shared is another Csibmnode's too)",
		"Csibmnodes without spec.UUID or spec.Addresses.Hostname, not judged: nameless"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	if labels := liveCsibmnode(t, c, "a-live").GetLabels(); labels[LabelDrain] != "" {
		t.Errorf("Csibmnode a-live of the tainted Node w1 was labelled (%v): a Csibmnode in doubt is left as it is", labels)
	}
}
