package noderemoval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// Name is the plugin's registered name.
const Name = "node-removal"

// csi-baremetal's API, labels and finalizers (DESIGN.md §5, node-removal).
const (
	Group   = "csi-baremetal.dell.com"
	Version = "v1"

	// KindCsibmnode is csi-baremetal's Node kind (short name csibmnode).
	KindCsibmnode          = "Node"
	KindDrive              = "Drive"
	KindAvailableCapacity  = "AvailableCapacity"
	KindLogicalVolumeGroup = "LogicalVolumeGroup"
	KindVolume             = "Volume"

	// LabelDrain=DrainValue on a Csibmnode says its Node was drained for removal.
	LabelDrain = "node.dell.com/drain"
	DrainValue = "drain"

	FinalizerCsibmnode = "dell.emc.csi/csibmnode-cleanup"
	FinalizerLVG       = "dell.emc.csi/lvg-cleanup"
	FinalizerVolume    = "dell.emc.csi/volume-cleanup"

	// EventNodeRemovedUndrained is the Warning of a Node deleted without the label.
	EventNodeRemovedUndrained = "NodeRemovedUndrained"
	// EventDrainLabelFailed is the Warning of a label write that failed.
	EventDrainLabelFailed = "DrainLabelFailed"

	// AnnotationNodeName on a Csibmnode is the name of the Node it was matched to,
	// when that is not its hostname (FQDN Node names, a hostname override). It is
	// written while the Node exists because once the Node is gone nothing else
	// says which name its pods are bound to or which Node coming back cancels,
	// and it must survive a controller restart.
	AnnotationNodeName = "node-removal.limbo.dev/nodeName"

	// AnnotationDrained on a Csibmnode whose hostname is not its Node's name
	// says, in place of the drain label, that its Node was drained for
	// removal: csi-baremetal's operator reads the label with the hostname as
	// the Node's name, finds no Node of that name, and removes the live node's
	// records at once (it never labels such a Csibmnode itself).
	AnnotationDrained = "node-removal.limbo.dev/drained"

	// AnnotationCSINodeUUID on a Kubernetes Node is csi-baremetal's: the UUID
	// (spec.UUID) of the Csibmnode that csi-baremetal's Node controller matched
	// to it by all of its addresses (DeafultNodeIDAnnotationKey in csi-baremetal's
	// pkg/crcontrollers/node/common; its operator waits for it on every Node
	// before it deploys the node DaemonSet). csi-baremetal rewrites it only on a
	// full address match, so a Node whose InternalIP changed keeps the UUID of
	// its Csibmnode. limbo only reads it.
	AnnotationCSINodeUUID = "nodes.csi-baremetal.dell.com/uuid"
)

// labelRetryInterval re-runs the plugin after a failed label write.
const labelRetryInterval = 10 * time.Second

// Spec is the plugin's input; its schema is generated from it (plugin.SchemaOf).
type Spec struct {
	// NodeSelector selects the Nodes whose drain taint is mirrored on their
	// Csibmnode; default all. A Node that exists is never removed, in scope or not.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// DrainTaint marks a Node drained for removal; default
	// node.dell.com/drain=drain:NoSchedule. Key, value and effect must all match.
	DrainTaint *Taint `json:"drainTaint,omitempty"`
	// NodePodSelector selects pods that must be gone from a removed node before its
	// resources are deleted (csi-baremetal's node DaemonSet pods); optional.
	NodePodSelector *metav1.LabelSelector `json:"nodePodSelector,omitempty"`
	// NodePodNamespace is the namespace of those pods (csi-baremetal's);
	// default every namespace. Set it: a pod of any namespace that matches the
	// selector and names a removed node holds its resources, and whoever may
	// create a pod may create one (the API server checks neither its labels
	// nor that its node exists).
	NodePodNamespace string `json:"nodePodNamespace,omitempty"`
	// RemoveUndrained also removes the resources of a Node deleted without the
	// drain label.
	RemoveUndrained bool `json:"removeUndrained,omitempty"`
}

// Taint is the drain taint.
type Taint struct {
	Key    string `json:"key" schema:"minLength=1"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect" schema:"enum=NoSchedule|PreferNoSchedule|NoExecute"`
}

// String is the taint as `kubectl taint` takes it: key=value:effect, or key:effect.
func (t Taint) String() string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// DefaultDrainTaint is csi-baremetal's.
var DefaultDrainTaint = Taint{Key: LabelDrain, Value: DrainValue, Effect: string(corev1.TaintEffectNoSchedule)}

// Options configure the plugin.
type Options struct {
	// Metrics records node-removal's metrics (NewMetrics); nil records into
	// unregistered ones.
	Metrics *Metrics
}

// Plugin is the node-removal plugin. It remembers, per Bundle resource, the
// undrained Nodes it reported, so that each is reported once.
type Plugin struct {
	opts  Options
	state plugin.ResourceStates[resourceState]

	// seriesMu guards seriesOwner: the state that last set each series of the
	// undrained-nodes gauge, by its labels. A Bundle deleted and made again under
	// its name has the old one's labels: forgetting the old one must not take
	// the new one's series.
	seriesMu    sync.Mutex
	seriesOwner map[string]*resourceState
}

// resourceState is what one Bundle resource reported of its undrained Nodes.
type resourceState struct {
	mu sync.Mutex
	// nodes are the undrained Nodes reported at the last run.
	nodes map[string]bool
	// series are the labels of the resource's series of the undrained-nodes
	// gauge; nil until its first report.
	series []string
}

// New returns the plugin.
func New(opts Options) *Plugin {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	p := &Plugin{opts: opts, seriesOwner: map[string]*resourceState{}}
	p.state = plugin.ResourceStates[resourceState]{
		New: func() *resourceState { return &resourceState{} },
		// A resource or Bundle gone takes its series with it: an alert on the
		// gauge must not fire for what is gone.
		Drop: func(st *resourceState) {
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.series == nil {
				return
			}
			key := strings.Join(st.series, "/")
			p.seriesMu.Lock()
			defer p.seriesMu.Unlock()
			if p.seriesOwner[key] == st {
				delete(p.seriesOwner, key)
				opts.Metrics.UndrainedNodes.DeleteLabelValues(st.series...)
			}
		},
	}
	return p
}

// ForgetBundle drops what the plugin remembers of a Bundle that is gone, and its
// series of the undrained-nodes gauge.
func (p *Plugin) ForgetBundle(uid types.UID) { p.state.Forget(uid) }

// ForgetResource drops what the plugin remembers of a resource that is gone, and
// its series of the undrained-nodes gauge.
func (p *Plugin) ForgetResource(uid types.UID, resource string) {
	p.state.ForgetResource(uid, resource)
}

// Describe names the plugin, its schema and its triggers: Nodes and the
// csi-baremetal kinds, metadata only (a trigger needs no more: the plugin reads
// them from the API server).
func (p *Plugin) Describe() plugin.Description {
	var watches []client.Object
	for _, gvk := range append([]schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Node"), GVK(KindCsibmnode)}, kindGVKs()...) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		watches = append(watches, m)
	}
	return plugin.Description{Name: Name, Schema: plugin.SchemaOf[Spec](), Watches: watches}
}

// config is a spec ready to use.
type config struct {
	Spec
	nodes, pods labels.Selector // pods is nil without nodePodSelector
	taint       Taint
}

// parse is the one reading of a spec: CheckSpec refuses what it refuses (a
// selector operator the schema lets through, "Near", is a spec error).
func parse(raw []byte) (config, error) {
	var c config
	if err := json.Unmarshal(raw, &c.Spec); err != nil {
		return c, err
	}
	var err error
	c.nodes = labels.Everything()
	if c.NodeSelector != nil {
		if c.nodes, err = parseSelector(field.NewPath("spec", "nodeSelector"), c.NodeSelector); err != nil {
			return c, err
		}
	}
	if c.NodePodSelector != nil {
		if c.pods, err = parseSelector(field.NewPath("spec", "nodePodSelector"), c.NodePodSelector); err != nil {
			return c, err
		}
	}
	if c.NodePodNamespace != "" {
		path := field.NewPath("spec", "nodePodNamespace")
		if msgs := validation.IsDNS1123Label(c.NodePodNamespace); len(msgs) > 0 {
			return c, field.Invalid(path, c.NodePodNamespace, strings.Join(msgs, "; "))
		}
		// Alone it would be ignored: a user who meant a pod check would
		// have none, and be told nothing.
		if c.NodePodSelector == nil {
			return c, field.Forbidden(path, "nodePodNamespace without nodePodSelector selects no pods: set nodePodSelector too, or drop it")
		}
	}
	c.taint = DefaultDrainTaint
	if c.DrainTaint != nil {
		c.taint = *c.DrainTaint
	}
	return c, nil
}

// parseSelector reads the label selector at path. Its errors are all reported,
// each under its own field: LabelSelectorAsSelector stops at the first bad
// label of matchLabels, a map, so that a selector with two would name either
// from one pass to the next.
func parseSelector(path *field.Path, s *metav1.LabelSelector) (labels.Selector, error) {
	if errs := metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, field.Invalid(path, field.OmitValueType{}, err.Error())
	}
	return sel, nil
}

// CheckSpec refuses a spec that parse refuses (plugin.SpecChecker).
func (*Plugin) CheckSpec(raw []byte) error {
	_, err := parse(raw)
	return err
}

// Plan mirrors the drain taint on Csibmnodes, records the names of their Nodes
// where they are not the hostnames, and inventories the csi-baremetal
// resources: desired while their Node exists, orphans once it is gone and was
// drained (or removeUndrained).
func (p *Plugin) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	cfg, err := parse(req.Spec)
	if err != nil {
		return nil, err
	}
	csiNodes, unjudged, err := listCSINodes(ctx, req.Reader)
	if err != nil {
		return nil, err
	}
	// Nodes from the API server too, and after the Csibmnodes: a Node registers
	// before csi-baremetal creates its Csibmnode, so this order never sees a
	// Csibmnode without the Node that it came with (a cache lagging behind could).
	var nodeList corev1.NodeList
	if err := req.Reader.List(ctx, &nodeList); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	index := newNodeIndex(nodeList.Items, csiNodes)
	res := &plugin.Result{Inventory: &plugin.Inventory{DesiredListed: len(nodeList.Items)}, Ready: true}
	var removed, undrained, contests, labelErrs []string
	for _, cn := range csiNodes {
		node, by, why := index.match(cn)
		desired := true
		switch {
		case cn.sharedUUID:
			// Whose are the Drives, Volumes, ... of the UUID? One of the
			// Csibmnodes may be a live node's: none is judged, none mirrored.
			contests = append(contests, fmt.Sprintf("%s (its UUID %s is another Csibmnode's too)", cn.displayName(), cn.uuid))
		case by == contested:
			// A Node that exists has its name or address: not gone (fail closed), but
			// csi-baremetal says that Node is another's, so nothing of it is mirrored.
			contests = append(contests, fmt.Sprintf("%s (%s)", cn.displayName(), why))
		case node != nil:
			// A Node that exists is never taken for gone, in scope or not, found by
			// UUID, name or address, whatever removeUndrained says.
			if err := syncCsibmnode(ctx, req, cn, node, by, cfg.nodes.Matches(labels.Set(node.Labels)), hasTaint(node, cfg.taint)); err != nil {
				labelErrs = append(labelErrs, err.Error())
			}
		case wasDrained(cn.obj) || cfg.RemoveUndrained:
			desired = false
			removed = append(removed, cn.displayName())
		default:
			undrained = append(undrained, cn.displayName())
		}
		group := cn.group(node)
		for _, item := range cn.resources {
			item.Desired = desired
			item.Group = group
			res.Inventory.Objects = append(res.Inventory.Objects, item)
		}
	}
	res.Events = p.reportUndrained(req, undrained, cfg.taint)
	res.Message = fmt.Sprintf("%d Csibmnodes, %d Nodes", len(csiNodes), len(nodeList.Items))
	if len(removed) > 0 {
		res.Message += fmt.Sprintf("; removed (in limbo): %s", strings.Join(removed, ", "))
	}
	if len(undrained) > 0 {
		res.Message += fmt.Sprintf("; deleted without the drain label, resources left alone: %s", strings.Join(undrained, ", "))
	}
	if len(contests) > 0 {
		res.Message += fmt.Sprintf("; Node in doubt, resources kept and Csibmnode left as it is: %s", strings.Join(contests, ", "))
	}
	if len(unjudged) > 0 {
		res.Message += fmt.Sprintf("; Csibmnodes without spec.UUID or spec.Addresses.Hostname, not judged: %s", strings.Join(unjudged, ", "))
	}
	if len(labelErrs) > 0 {
		res.Message += "; " + strings.Join(labelErrs, "; ")
		res.PollAfter = labelRetryInterval
		res.Events = append(res.Events, plugin.Event{Type: corev1.EventTypeWarning, Reason: EventDrainLabelFailed, Message: strings.Join(labelErrs, "; ")})
	}
	return res, nil
}

// reportUndrained records the undrained Nodes of req's resource (metric) and
// returns an event for each one not reported before.
func (p *Plugin) reportUndrained(req plugin.Request, undrained []string, taint Taint) []plugin.Event {
	st := p.state.Of(req)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.series = []string{req.Bundle.Namespace, req.Bundle.Name, req.Resource}
	p.seriesMu.Lock()
	p.seriesOwner[strings.Join(st.series, "/")] = st
	p.opts.Metrics.UndrainedNodes.WithLabelValues(st.series...).Set(float64(len(undrained)))
	p.seriesMu.Unlock()
	now := map[string]bool{}
	var events []plugin.Event
	for _, name := range undrained {
		now[name] = true
		if !st.nodes[name] {
			events = append(events, plugin.Event{Type: corev1.EventTypeWarning, Reason: EventNodeRemovedUndrained, Message: fmt.Sprintf(
				"Node %s was deleted without its Csibmnode being labelled %s=%s (taint it %s and wait for the label before deleting it); its csi-baremetal resources are left alone (removeUndrained: false)",
				name, LabelDrain, DrainValue, taint)})
		}
	}
	st.nodes = now
	return events
}

// MayDelete is the gate of a removed node's resources (group: the names the node
// went by and its UUID, see csiNode.group), read fresh: no Node may have any of
// the names, no Node may carry its UUID in AnnotationCSINodeUUID (csi-baremetal
// matched a Node to it again, under whatever name), and no pod matching
// nodePodSelector may be bound to any of the names, nor to the hostname under a
// domain (w3.example.com for hostname w3) unless a Node of that name exists that
// csi-baremetal tied to another Csibmnode: csi-baremetal's node
// pod is bound to the Node's name, which need not be the Csibmnode's hostname,
// and limbo may never have learnt it (the Node gone before the Bundle was made,
// or the write of its name refused).
func (p *Plugin) MayDelete(ctx context.Context, req plugin.Request, group string) (string, error) {
	cfg, err := parse(req.Spec)
	if err != nil {
		return "", err
	}
	names, uuid := groupParts(group)
	for _, name := range names {
		var node corev1.Node
		switch err := req.Reader.Get(ctx, client.ObjectKey{Name: name}, &node); {
		case err == nil:
			return fmt.Sprintf("Node %s exists again", name), nil
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("read Node %s: %w", name, err)
		}
	}
	if uuid != "" {
		var nodes corev1.NodeList
		if err := req.Reader.List(ctx, &nodes); err != nil {
			return "", fmt.Errorf("list Nodes: %w", err)
		}
		for i := range nodes.Items {
			if csiUUIDOf(&nodes.Items[i]) == uuid {
				return fmt.Sprintf("Node %s exists again (%s=%s)", nodes.Items[i].Name, AnnotationCSINodeUUID, uuid), nil
			}
		}
	}
	if cfg.pods == nil {
		return "", nil
	}
	var pods corev1.PodList
	if err := req.Reader.List(ctx, &pods, client.MatchingLabelsSelector{Selector: cfg.pods}, client.InNamespace(cfg.NodePodNamespace)); err != nil {
		return "", fmt.Errorf("list pods (nodePodSelector): %w", err)
	}
	bound := map[string][]*corev1.Pod{} // by node name
	var domains []string                // node names hostname.<domain>, in pod order
	for i := range pods.Items {
		pod := &pods.Items[i]
		name := pod.Spec.NodeName
		switch {
		case slices.Contains(names, name):
		case strings.HasPrefix(name, names[0]+"."):
			if len(bound[name]) == 0 {
				domains = append(domains, name)
			}
		default:
			continue
		}
		bound[name] = append(bound[name], pod)
	}
	for _, name := range domains {
		// A Node of the hostname under a domain that csi-baremetal tied to
		// another Csibmnode (its UUID is not this one's: checked above) is
		// another node of the same short name. One it tied to none may be this
		// node back under its FQDN, its name never recorded: it holds (fail
		// closed).
		var node corev1.Node
		switch err := req.Reader.Get(ctx, client.ObjectKey{Name: name}, &node); {
		case err == nil && csiUUIDOf(&node) != "":
			delete(bound, name)
		case err != nil && !apierrors.IsNotFound(err):
			return "", fmt.Errorf("read Node %s: %w", name, err)
		}
	}
	for _, name := range slices.Concat(names, domains) {
		if on := bound[name]; len(on) > 0 {
			hold := fmt.Sprintf("pod %s/%s (nodePodSelector) is still bound to node %s", on[0].Namespace, on[0].Name, name)
			if len(on) > 1 {
				hold += fmt.Sprintf(" (and %d more)", len(on)-1)
			}
			return hold, nil
		}
	}
	return "", nil
}
