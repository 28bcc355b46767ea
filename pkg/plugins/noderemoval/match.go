package noderemoval

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Matching a Csibmnode to its Node.

// matchedBy is how a Csibmnode was matched to its Node.
type matchedBy int

const (
	unmatched matchedBy = iota
	// byUUID: the one Node whose AnnotationCSINodeUUID is the Csibmnode's UUID,
	// whatever its name and addresses: csi-baremetal's own match.
	byUUID
	// byName: a Node has its hostname or its recorded Node name.
	byName
	// byAddress: the one Node with its InternalIP, which no other Csibmnode goes
	// by. Weaker than a name: a removed Node's address is handed on (DHCP, a
	// hardware swap).
	byAddress
	// contested: a Node that exists has its name or address, but csi-baremetal's
	// annotation says the Node is another Csibmnode's (or two Nodes carry its
	// UUID). The Csibmnode is not gone, but limbo writes nothing on it from that
	// Node: neither its drain taint nor its name.
	contested
)

// nodeIndex finds the Node of a Csibmnode.
type nodeIndex struct {
	byName map[string]*corev1.Node
	byIP   map[string][]*corev1.Node
	// byUUID are the Nodes by their AnnotationCSINodeUUID, in name order.
	byUUID map[string][]*corev1.Node
	// claims are the Csibmnodes by the names they go by (csiNode.names).
	claims map[string][]*csiNode
}

func newNodeIndex(nodes []corev1.Node, csiNodes []*csiNode) *nodeIndex {
	ix := &nodeIndex{byName: map[string]*corev1.Node{}, byIP: map[string][]*corev1.Node{}, byUUID: map[string][]*corev1.Node{}, claims: map[string][]*csiNode{}}
	for i := range nodes {
		node := &nodes[i]
		ix.byName[node.Name] = node
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && a.Address != "" && !slices.Contains(ix.byIP[a.Address], node) {
				ix.byIP[a.Address] = append(ix.byIP[a.Address], node)
			}
		}
		if uuid := csiUUIDOf(node); uuid != "" {
			ix.byUUID[uuid] = append(ix.byUUID[uuid], node)
		}
	}
	for _, nodes := range ix.byUUID {
		slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, cn := range csiNodes {
		for _, name := range cn.names() {
			ix.claims[name] = append(ix.claims[name], cn)
		}
	}
	return ix
}

// csiUUIDOf is the Csibmnode UUID csi-baremetal wrote on node ("" for none).
func csiUUIDOf(node *corev1.Node) string { return node.Annotations[AnnotationCSINodeUUID] }

// match finds cn's Node, in this order:
//  1. the Node whose AnnotationCSINodeUUID is cn's UUID: csi-baremetal's own
//     match, which holds whatever the names and addresses say (FQDN Node names
//     whose name was never recorded, an InternalIP that changed). Two such Nodes
//     contest it.
//  2. a Node of a name cn goes by (its hostname, then its recorded Node name),
//     unless that Node's annotation names another UUID: such a Node contests it.
//  3. the Node with its InternalIP, when that is unambiguous (a hostname
//     override, FQDN Node names: Node worker-3.example.com for hostname
//     worker-3): exactly one Node has the address and no other Csibmnode goes by
//     that Node's name or its short name (the new Node's own Csibmnode, when the
//     address passed to it). The address is not used for a Csibmnode whose Node
//     name is recorded (its Node is known), nor for one in limbo: only a Node of
//     its name or UUID brings it back. A Node found so whose annotation names
//     another UUID contests it.
//
// A contested Csibmnode is not gone, and why says what contests it. The
// annotation only ever keeps a Csibmnode or withholds limbo's writes on it: it
// never makes one gone that would not be without it (fail closed).
func (ix *nodeIndex) match(cn *csiNode) (node *corev1.Node, by matchedBy, why string) {
	switch nodes := ix.byUUID[cn.uuid]; len(nodes) {
	case 0:
	case 1:
		return nodes[0], byUUID, ""
	default:
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		return nodes[0], contested, fmt.Sprintf("Nodes %s all carry %s=%s", strings.Join(names, ", "), AnnotationCSINodeUUID, cn.uuid)
	}
	// From here on a Node's annotation, if any, names another UUID.
	var other *corev1.Node
	for _, name := range cn.names() {
		switch node := ix.byName[name]; {
		case node == nil:
		case csiUUIDOf(node) == "":
			return node, byName, ""
		case other == nil:
			other = node
		}
	}
	if other != nil {
		return other, contested, contestedBy(other)
	}
	if cn.nodeName != "" || cn.internalIP == "" || cn.inLimbo() {
		return nil, unmatched, ""
	}
	candidates := ix.byIP[cn.internalIP]
	if len(candidates) != 1 {
		return nil, unmatched, ""
	}
	node = candidates[0]
	short, _, _ := strings.Cut(node.Name, ".")
	for _, name := range []string{node.Name, short} {
		for _, other := range ix.claims[name] {
			if other != cn {
				return nil, unmatched, ""
			}
		}
	}
	if csiUUIDOf(node) != "" {
		return node, contested, contestedBy(node)
	}
	return node, byAddress, ""
}

func contestedBy(node *corev1.Node) string {
	return fmt.Sprintf("Node %s carries %s=%s", node.Name, AnnotationCSINodeUUID, csiUUIDOf(node))
}
