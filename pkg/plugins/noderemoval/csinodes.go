package noderemoval

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/restmappings"
)

// The csi-baremetal side: the Csibmnodes and the resources of each node.

// nodeKind is a csi-baremetal kind of a node's resources, in delete order.
type nodeKind struct {
	kind string
	// nodeField holds the Csibmnode's UUID (spec fields are capitalised).
	nodeField []string
	// clear are the finalizers cleared before the delete.
	clear []string
}

// nodeKinds are deleted in this order, the Csibmnode after them all.
var nodeKinds = []nodeKind{
	{kind: KindDrive, nodeField: []string{"spec", "NodeId"}},
	{kind: KindAvailableCapacity, nodeField: []string{"spec", "NodeId"}},
	{kind: KindLogicalVolumeGroup, nodeField: []string{"spec", "Node"}, clear: []string{FinalizerLVG}},
	{kind: KindVolume, nodeField: []string{"spec", "NodeId"}, clear: []string{FinalizerVolume}},
}

// GVK is the csi-baremetal kind's GroupVersionKind.
func GVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: Group, Version: Version, Kind: kind}
}

func kindGVKs() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, len(nodeKinds))
	for i, k := range nodeKinds {
		out[i] = GVK(k.kind)
	}
	return out
}

// csiNode is a Csibmnode with its node's resources.
type csiNode struct {
	obj      *unstructured.Unstructured
	hostname string
	// internalIP is spec.Addresses.InternalIP ("" when unset).
	internalIP string
	// nodeName is the Node name recorded on it (AnnotationNodeName; "" when none).
	nodeName string
	uuid     string
	// sharedUUID: another Csibmnode has this one's UUID (a hand-made copy, a
	// restore): which node the resources of the UUID are is in doubt.
	sharedUUID bool
	resources  []plugin.ObjectItem // without Desired and Group: set by Plan
}

// names are the Node names the node goes by: its hostname and the recorded name
// of its Node when that differs.
func (cn *csiNode) names() []string {
	if cn.nodeName == "" || cn.nodeName == cn.hostname {
		return []string{cn.hostname}
	}
	return []string{cn.hostname, cn.nodeName}
}

// displayName names the node in messages and events: its Node's name when known.
func (cn *csiNode) displayName() string {
	if cn.nodeName != "" {
		return cn.nodeName
	}
	return cn.hostname
}

// inLimbo reports whether a countdown runs on any of the node's resources: it
// was judged removed.
func (cn *csiNode) inLimbo() bool {
	for _, it := range cn.resources {
		if _, ok := it.Object.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; ok {
			return true
		}
	}
	return false
}

// A node's group is the names it went by, joined by groupSeparator, then
// groupUUIDSeparator and its UUID: Node names are DNS subdomains, which hold
// neither separator, so the UUID is all after the first "/" whatever it holds.
const (
	groupSeparator     = ","
	groupUUIDSeparator = "/"
)

// group is the group of the node's resources, which MayDelete reads back
// (groupParts): the names the node goes by (its hostname first), the name of the
// Node matched to it now when that is another (node; nil for none), and its UUID.
func (cn *csiNode) group(node *corev1.Node) string {
	names := cn.names()
	if node != nil && !slices.Contains(names, node.Name) {
		names = append(names, node.Name)
	}
	return strings.Join(names, groupSeparator) + groupUUIDSeparator + cn.uuid
}

// groupParts are the Node names (the hostname first) and the UUID of a group.
func groupParts(group string) (names []string, uuid string) {
	joined, uuid, _ := strings.Cut(group, groupUUIDSeparator)
	return strings.Split(joined, groupSeparator), uuid
}

// listCSINodes lists the Csibmnodes and the resources of each, from the API
// server. Field selectors on csi-baremetal's spec fields are not supported: every
// kind is listed whole and filtered. Csibmnodes without a UUID or hostname are
// not judged: their names are returned in unjudged. The resources of a UUID
// that several Csibmnodes carry go with the last listed, and every one of them
// is marked sharedUUID.
func listCSINodes(ctx context.Context, r client.Reader) (out []*csiNode, unjudged []string, err error) {
	list := func(kind string) ([]unstructured.Unstructured, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(GVK(kind + "List"))
		if err := r.List(ctx, l); err != nil {
			if restmappings.NotServed(err) {
				return nil, fmt.Errorf("csi-baremetal's CRDs are not installed: the API server does not serve %s %s/%s; install csi-baremetal (or its CRDs) first", kind, Group, Version)
			}
			return nil, fmt.Errorf("list %s.%s: %w", kind, Group, err)
		}
		for i := range l.Items {
			l.Items[i].SetGroupVersionKind(GVK(kind))
		}
		return l.Items, nil
	}
	nodes, err := list(KindCsibmnode)
	if err != nil {
		return nil, nil, err
	}
	byUUID := map[string]*csiNode{}
	for i := range nodes {
		obj := &nodes[i]
		uuid, _, _ := unstructured.NestedString(obj.Object, "spec", "UUID")
		host, _, _ := unstructured.NestedString(obj.Object, "spec", "Addresses", "Hostname")
		if uuid == "" || host == "" {
			unjudged = append(unjudged, obj.GetName())
			continue
		}
		ip, _, _ := unstructured.NestedString(obj.Object, "spec", "Addresses", "InternalIP")
		cn := &csiNode{obj: obj, hostname: host, internalIP: ip, nodeName: obj.GetAnnotations()[AnnotationNodeName], uuid: uuid}
		if other := byUUID[uuid]; other != nil {
			other.sharedUUID, cn.sharedUUID = true, true
		}
		byUUID[uuid] = cn
		out = append(out, cn)
	}
	for order, k := range nodeKinds {
		items, err := list(k.kind)
		if err != nil {
			return nil, nil, err
		}
		for i := range items {
			id, _, _ := unstructured.NestedString(items[i].Object, k.nodeField...)
			if cn := byUUID[id]; cn != nil {
				cn.resources = append(cn.resources, plugin.ObjectItem{Object: &items[i], Order: order, ClearFinalizers: k.clear})
			}
		}
	}
	for _, cn := range out {
		// The Csibmnode last, its finalizer kept: its own controller clears it.
		cn.resources = append(cn.resources, plugin.ObjectItem{Object: cn.obj, Order: len(nodeKinds)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].hostname < out[j].hostname })
	return out, unjudged, nil
}
