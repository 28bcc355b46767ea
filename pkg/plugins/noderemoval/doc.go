// Package noderemoval is the node-removal plugin (seed: Dell csi-baremetal's
// automated node removal): the csi-baremetal custom resources of a drained Node
// that was deleted go through limbo's soft-delete engine, and the Node coming back
// cancels.
//
//   - A Csibmnode's Node carries its UUID in csi-baremetal's annotation
//     (AnnotationCSINodeUUID), or has its hostname, or the Node name recorded on
//     it (AnnotationNodeName), or else its InternalIP when that is unambiguous;
//     a Node of its name or address that the annotation gives to another
//     Csibmnode keeps it but is not mirrored on it (see nodeIndex.match). The
//     Node's name is recorded when it is not the hostname.
//   - A Node in scope with the drain taint (key, value and effect) gets the label
//     node.dell.com/drain=drain on its Csibmnode; the taint gone, the label goes.
//   - A Node gone whose Csibmnode is labelled: the Csibmnode and the Drives,
//     AvailableCapacities, LogicalVolumeGroups and Volumes with its UUID are
//     orphans (object items), stamped with the resource's deletionDelay.
//   - At the deadline, once no Node has a name it went by or carries its UUID,
//     and no pod matching nodePodSelector is bound to the node under any name it
//     went by (the gate, MayDelete): Drives, AvailableCapacities, LogicalVolumeGroups and
//     Volumes (their csi finalizers cleared first), the Csibmnode last with its
//     finalizer kept, for csi-baremetal's node controller to clear. One node is one
//     group: its trouble never blocks another node.
//   - A Node deleted without the label: Warning event NodeRemovedUndrained, the
//     resource's message and a metric; its resources are left alone unless
//     removeUndrained is true.
//
// Everything is read from the API server (Request.Reader): the csi-baremetal kinds
// may be absent from a cluster (the run then fails with a clear error), and the
// Nodes are read after the Csibmnodes so that a new Csibmnode is never judged
// without the Node it came with.
package noderemoval
