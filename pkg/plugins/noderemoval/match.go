package noderemoval

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Matching a Csibmnode to its Node.

// matchedBy is how a Csibmnode was matched to its Node.
type matchedBy int

const (
	unmatched matchedBy = iota
	// byName: a Node has its hostname or its recorded Node name.
	byName
	// byAddress: the one Node with its InternalIP, which no other Csibmnode goes
	// by. Weaker than a name: a removed Node's address is handed on (DHCP, a
	// hardware swap).
	byAddress
)

// nodeIndex finds the Node of a Csibmnode.
type nodeIndex struct {
	byName map[string]*corev1.Node
	byIP   map[string][]*corev1.Node
	// claims are the Csibmnodes by the names they go by (csiNode.names).
	claims map[string][]*csiNode
}

func newNodeIndex(nodes []corev1.Node, csiNodes []*csiNode) *nodeIndex {
	ix := &nodeIndex{byName: map[string]*corev1.Node{}, byIP: map[string][]*corev1.Node{}, claims: map[string][]*csiNode{}}
	for i := range nodes {
		node := &nodes[i]
		ix.byName[node.Name] = node
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && a.Address != "" && !slices.Contains(ix.byIP[a.Address], node) {
				ix.byIP[a.Address] = append(ix.byIP[a.Address], node)
			}
		}
	}
	for _, cn := range csiNodes {
		for _, name := range cn.names() {
			ix.claims[name] = append(ix.claims[name], cn)
		}
	}
	return ix
}

// match finds cn's Node: by a name it goes by, else by its InternalIP when that
// is unambiguous (a hostname override, FQDN Node names: Node worker-3.example.com
// for hostname worker-3). It is unambiguous when exactly one Node has the
// address and no other Csibmnode goes by that Node's name or its short name (the
// new Node's own Csibmnode, when the address passed to it). The address is not
// used for a Csibmnode whose Node name is recorded (its Node is known), nor for
// one in limbo: only a Node of its name brings it back.
func (ix *nodeIndex) match(cn *csiNode) (*corev1.Node, matchedBy) {
	for _, name := range cn.names() {
		if node := ix.byName[name]; node != nil {
			return node, byName
		}
	}
	if cn.nodeName != "" || cn.internalIP == "" || cn.inLimbo() {
		return nil, unmatched
	}
	candidates := ix.byIP[cn.internalIP]
	if len(candidates) != 1 {
		return nil, unmatched
	}
	node := candidates[0]
	short, _, _ := strings.Cut(node.Name, ".")
	for _, name := range []string{node.Name, short} {
		for _, other := range ix.claims[name] {
			if other != cn {
				return nil, unmatched
			}
		}
	}
	return node, byAddress
}
