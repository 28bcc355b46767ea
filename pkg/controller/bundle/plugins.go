package bundle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// pluginOutcome is a plugin resource's inventory, processed with the orphans.
type pluginOutcome struct {
	res       *bundlespec.Resource
	inventory *plugin.Inventory
	// ok: the plan succeeded, so the inventory is the truth about the domain.
	ok bool
	// plugin and req ran the plan; the gate of object items asks them again.
	plugin plugin.Plugin
	req    plugin.Request
}

// syncPlugin runs a plugin resource: plan, apply its generated objects like object
// resources, and keep its inventory for the orphan step. It also returns the
// writes of its generated objects.
func (p *pass) syncPlugin(ctx context.Context, res *bundlespec.Resource) (limbov1alpha1.ResourceStatus, []*appliedChange) {
	st := limbov1alpha1.ResourceStatus{Name: res.Name}
	var changes []*appliedChange
	// declaredStale: what a stale plan of res made is declared (declareStale),
	// and may have moved to another resource. A resource that fails otherwise,
	// before or while acting on its plan, is idle: what it generated before
	// stays its own (heldByIdleGenerator).
	declaredStale := false
	fail := func(state limbov1alpha1.ResourceState, reason, format string, args ...any) (limbov1alpha1.ResourceStatus, []*appliedChange) {
		st.State, st.Reason, st.Message = state, reason, fmt.Sprintf(format, args...)
		p.plugins = append(p.plugins, pluginOutcome{res: res})
		if !declaredStale {
			p.idleGenerators[res.Name] = true
		}
		return st, changes
	}
	plug, ok := p.r.Plugins.Get(res.Plugin.Name)
	if !ok {
		return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonUnknownPlugin, "%v", p.r.Plugins.UnknownPlugin(res.Plugin.Name))
	}
	if waiting := p.unreadyDependencies(res.Name); len(waiting) > 0 {
		return fail(limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady, "%s", blockedMessage(waiting))
	}
	spec, err := p.pluginSpec(ctx, res)
	if err != nil {
		state, reason, message := referenceFailure(err)
		return fail(state, reason, "%s", message)
	}
	// Parse checked the spec with the references' examples; the values they
	// read are checked here, before the plugin sees them.
	if len(res.References) > 0 {
		if err := p.r.Plugins.ValidateSpec(res.Plugin.Name, &apiextensionsv1.JSON{Raw: spec}, nil); err != nil {
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidPluginSpec, "plugin %q, with its references resolved: %v", res.Plugin.Name, err)
		}
	}
	secrets, err := impersonation.SecretReader(ctx, p.r.Client, p.r.APIReader)
	if err != nil {
		p.fail(err)
		return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed, "%v", err)
	}
	req := plugin.Request{Bundle: p.bundle, Resource: res.Name, Spec: spec, Client: p.r.pluginClient(), Reader: p.r.APIReader, Secrets: secrets, Now: p.r.Clock.Now()}
	// The plugin's name is part of the input: a resource renamed to another
	// plugin with the same spec must not be handed the other plugin's result.
	input := callInput([]byte(res.Plugin.Name), spec)
	planned := p.r.plans.call(ctx, p.bundle, res.Name, input, func(ctx context.Context, b *limbov1alpha1.Bundle) (*plugin.Result, error) {
		req := req
		req.Bundle = b
		return plug.Plan(ctx, req)
	})
	result, err := planned.result, planned.err
	desc := plug.Describe()
	if result == nil && err == nil && !planned.current {
		// The first plan is still running; its end triggers the next pass.
		return fail(limbov1alpha1.ResourceInProgress, limbov1alpha1.ReasonPlanning, "waiting for the plugin's first plan")
	}
	if planned.stale {
		// The spec changed and its plan still runs. The last plan is of the old
		// spec: what it generated tells nothing of what the new one makes (an
		// object moved into this generator from a template or another generator
		// would be an orphan in a pass that took it), so the resource is not
		// Ready and the pass decides no orphan. What the old plan generated
		// stays declared (not applied again): it is not listed as leaving.
		p.declareStale(res, result)
		// No last plan (it failed): nothing declared, so the resource is
		// idle, and what it made stays its own.
		declaredStale = result != nil
		return fail(limbov1alpha1.ResourceInProgress, limbov1alpha1.ReasonPlanning, "waiting for the plugin's plan of the changed spec")
	}
	if err == nil && result == nil {
		err = errors.New("the plugin returned no result")
	}
	if poll := pollAfter(desc, result); poll > 0 {
		p.after(poll)
	}
	if err != nil {
		err = fmt.Errorf("plugin %q: %w", res.Plugin.Name, err)
		p.fail(err)
		return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed, "%v", err)
	}
	if planned.current { // a plan's events once, not on every pass that reuses it
		for _, ev := range result.Events {
			p.announce(ev.Type, ev.Reason, "%s", ev.Message)
		}
	}
	if _, _, err := result.Inventory.Orphans(); err != nil {
		return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonUnsafeInventory, "plugin %q: %v", res.Plugin.Name, err)
	}
	// Only a plan of the current spec that no pass acted on yet decides items;
	// the last known state of a plugin still planning gives its readiness.
	p.plugins = append(p.plugins, pluginOutcome{res: res, inventory: result.Inventory, ok: planned.current, plugin: plug, req: req})
	st.State, st.Message = limbov1alpha1.ResourceReady, result.Message
	if !result.Ready {
		st.State, st.Reason = limbov1alpha1.ResourceInProgress, limbov1alpha1.ReasonPluginNotReady
	}
	// The digests of the objects found holding limbo's apply, together in the
	// resource's entry: a restarted process applies again only the others
	// (appliedCache.seed). An object whose apply failed has none and is left
	// out; a pass that refuses an object of the plan (fail, below) records
	// none at all, and the last written stay (settleAppliedDigests).
	var digests []string
	for _, obj := range result.Objects {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(p.bundle.Namespace)
		}
		if obj.GetNamespace() != p.bundle.Namespace {
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed, "plugin %q generated %s %q in namespace %q; a Bundle's objects live in its own namespace", res.Plugin.Name, obj.GetKind(), obj.GetName(), obj.GetNamespace())
		}
		if bundlespec.LimbosOwnKind(obj.GroupVersionKind()) {
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidObject, "plugin %q generated %s %q: a Bundle cannot hold a %s", res.Plugin.Name, obj.GetKind(), obj.GetName(), obj.GetKind())
		}
		// (A kind not served yet fails its apply, as a template's does.)
		if reason, err := bundlespec.HeldKind(p.r.Mapper, obj.GroupVersionKind()); reason == limbov1alpha1.ReasonClusterScoped {
			return fail(limbov1alpha1.ResourceError, reason, "plugin %q generated %s %q: %v", res.Plugin.Name, obj.GetKind(), obj.GetName(), err)
		}
		if set := bundlespec.LimboOnly(obj); len(set) > 0 {
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonProhibitedAnnotation, "plugin %q generated %s %q with %s, which only limbo sets", res.Plugin.Name, obj.GetKind(), obj.GetName(), strings.Join(set, ", "))
		}
		// A delay the plugin chose is checked as a template's is (after a
		// teardown, no Bundle would be left to report it).
		if err := bundlespec.InvalidDelay(obj); err != nil {
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidDeletionDelay, "plugin %q generated %s %q with %s: %v", res.Plugin.Name, obj.GetKind(), obj.GetName(), limbov1alpha1.AnnotationDeletionDelay, err)
		}
		// One object, one declaration: never a tug of war of applies between a
		// template and a generator, or two generators.
		key := objectKey(obj)
		other, dup := p.declared[key]
		if !dup {
			held, err := p.heldByIdleGenerator(ctx, obj, res.Name)
			if err != nil {
				return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonReadFailed, "%v", err)
			}
			if held != "" {
				p.declared[key] = held // still its generator's: no orphan either
				other, dup = held, true
			}
		}
		if dup && other != res.Name {
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonDuplicateObject, "plugin %q generated %s %q, which resource %q declares already", res.Plugin.Name, obj.GetKind(), obj.GetName(), other)
		}
		p.declared[key] = res.Name
		p.kinds[obj.GroupVersionKind()] = true
		declared := declaredGenerated(obj, res)
		out := p.syncOne(ctx, res.Name, declared, false, nil, func() (*unstructured.Unstructured, error) { return p.ownGenerated(declared.DeepCopy(), res) })
		objSt := out.status
		if objSt.AppliedDigest != "" {
			digests = append(digests, objSt.AppliedDigest)
		}
		if out.live != nil && p.live[res.Name] == nil {
			p.live[res.Name] = out.live // references to a generator read its first object
		}
		if out.change != nil {
			changes = append(changes, out.change)
		}
		if st.Object == nil {
			st.Object = objSt.Object
		}
		if objSt.State != limbov1alpha1.ResourceReady {
			st.State, st.Reason, st.Message = objSt.State, objSt.Reason, objSt.Message
		}
	}
	st.AppliedDigest = joinDigests(digests)
	return st, changes
}

// heldByIdleGenerator is the resource that holds obj, which generator resource
// gen generates too, when that is another generator that this pass processed
// before gen without a plan to act on (Blocked, failed, still at its first
// plan): the live object is the Bundle's and says that resource generated it
// (AnnotationGeneratedBy). Such a generator declares nothing in the pass, so the
// first-come check would let gen take the object over and rewrite it, and the
// holder take it back once it plans again: a tug of war driven by its
// dependencies' readiness. "" when the object is gen's to apply: none, not the
// Bundle's, generated by gen or by no other generator of the spec, or by one
// that planned in this pass (and dropped it) or comes later in it (the first
// come is the holder, as always).
func (p *pass) heldByIdleGenerator(ctx context.Context, obj *unstructured.Unstructured, gen string) (string, error) {
	if len(p.idleGenerators) == 0 {
		return "", nil // the common pass: no read of the object before syncOne's
	}
	live, err := p.readLive(ctx, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), false)
	if err != nil || live == nil {
		return "", err
	}
	if owner := metav1.GetControllerOf(live); owner == nil || owner.UID != p.bundle.UID {
		return "", nil
	}
	if holder := p.idleHolder(live); holder != gen {
		return holder, nil
	}
	return "", nil
}

// idleHolder is the generator resource of the spec that generated o, an object
// of the Bundle, when this pass processed it without a plan to act on
// (idleGenerators); "" for any other object. Such a generator declares nothing
// in the pass, yet what it generated before is still its own: neither another
// generator's to take (heldByIdleGenerator) nor an orphan, until a plan of it
// drops the object.
func (p *pass) idleHolder(o metav1.Object) string {
	holder := o.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]
	if holder == "" || !p.idleGenerators[holder] {
		return ""
	}
	if res := p.plan.Resources[holder]; res == nil || res.Plugin == nil {
		return ""
	}
	return holder
}

// notIdleGenerated is orphans without the objects an idle generator holds
// (idleHolder), which it records as that generator's declarations, their kinds
// the Bundle's (status.managedKinds). An object in limbo stays an orphan: a
// plan of its generator dropped it, and an idle generator says nothing new.
// A held object gets the generator resource's deletionDelay when it lengthens
// its countdown, as an object of a Blocked template gets the template's
// (keepDeclaredDelay): the delay is put on before the generator is removed.
// The plugin may have given the object a shorter delay of its own, which only
// its plan tells; the longer one stands for it until the next apply.
func (p *pass) notIdleGenerated(ctx context.Context, orphans []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := orphans[:0:0]
	for _, o := range orphans {
		if holder := p.idleHolder(o); holder != "" && !softdelete.HasLimboMark(o) {
			p.declared[objectKey(o)] = holder
			p.kinds[o.GroupVersionKind()] = true
			if res := p.bundle.PluginResource(holder); res != nil {
				p.keepDeclaredDelay(ctx, res.Plugin.DeletionDelay, o)
			}
			continue
		}
		out = append(out, o)
	}
	return out
}

// declareStale records the objects a plan of res's previous spec generated
// (result may be nil: that plan failed) as declared for the orphan decisions
// only (staleDeclared): the new spec may have moved one to another resource,
// whose declaration is not a duplicate of this one.
func (p *pass) declareStale(res *bundlespec.Resource, result *plugin.Result) {
	if result == nil {
		return
	}
	for _, obj := range result.Objects {
		if obj.GetNamespace() != "" && obj.GetNamespace() != p.bundle.Namespace {
			continue
		}
		p.staleDeclared[objectKey(obj)] = res.Name
		p.kinds[obj.GroupVersionKind()] = true
	}
}

// minPluginPoll is the shortest wait before a plugin resource's next pass
// that a plugin's poll asks for. A plugin that asks for less — a bug, an
// interval that slipped past its spec's minimum, a next run that is nearly due
// — would otherwise run passes, each with a Plan and its backend calls (a
// login, a listing), in a hot loop.
const minPluginPoll = time.Second

// pollAfter is when a plugin resource's pass comes again for its poll: the
// plan's PollAfter, else the plugin's default, at least minPluginPoll; 0 for
// none (the plugin runs on events only).
func pollAfter(desc plugin.Description, result *plugin.Result) time.Duration {
	poll := desc.DefaultPollInterval
	if result != nil && result.PollAfter > 0 {
		poll = result.PollAfter
	}
	if poll <= 0 {
		return 0
	}
	return max(poll, minPluginPoll)
}

// pluginSpec is the plugin resource's spec with references resolved from this
// pass's live objects, as JSON.
func (p *pass) pluginSpec(ctx context.Context, res *bundlespec.Resource) ([]byte, error) {
	sources, err := p.sources(ctx, res.References)
	if err != nil {
		return nil, err
	}
	return plugin.ResolveSpec(res.Resource, sources)
}

// decidePluginItems takes plugin items out of limbo when they are desired again,
// and hands orphans to the engine when deletions are allowed (ready). Tombstones
// of items that are no longer orphans, or of resources that are gone, are
// cancelled.
func (p *pass) decidePluginItems(ctx context.Context, ready bool) {
	existing, err := p.tombstones(ctx)
	if err != nil {
		p.failUndecided(err)
		// Nothing of the plugins' is judged: what was in limbo stays listed, and
		// the next pass looks for it again.
		p.keepPreviousPending()
		return
	}
	// A Tombstone is cancelled only when its item is desired again or its plugin
	// resource left the Bundle. An item a plugin did not judge in this run (absent
	// from its inventory, or its plan failed) keeps its countdown: if the item
	// vanished meanwhile, the Tombstone's delete finds it gone, which is success.
	desiredItems := map[string]bool{}
	for _, out := range p.plugins {
		if !out.ok {
			continue
		}
		p.processObjectItems(ctx, out, ready)
		_, desiredExternal := out.inventory.Desired()
		for _, item := range desiredExternal {
			desiredItems[softdelete.TombstoneKey(out.res.Name, item.ExternalItem)] = true
		}
		_, orphanItems, _ := out.inventory.Orphans() // checked in syncPlugin
		if !ready {
			continue
		}
		if len(orphanItems) > 0 && !p.stillInShard(ctx) {
			continue
		}
		newItems, held := newOrphanItems(out.res.Name, orphanItems, existing)
		if held > 0 {
			err := fmt.Errorf("resource %q: %d orphans not taken into limbo: the resource has %d Tombstones, the most one may have; they are taken as those end",
				out.res.Name, held, MaxTombstonesPerResource)
			p.announce(corev1.EventTypeWarning, limbov1alpha1.ReasonPluginFailed, "%v", err)
			p.fail(err)
		}
		for _, item := range newItems {
			ts, err := p.r.Engine.OrphanExternal(ctx, p.bundle, out.res.Plugin.Name, out.res.Name, out.res.Plugin.DeletionDelay, item.ExternalItem)
			if err != nil {
				p.announce(corev1.EventTypeWarning, limbov1alpha1.ReasonPluginFailed, "%v", err)
				p.fail(err)
				continue
			}
			p.pending = append(p.pending, p.r.Engine.TombstonePending(ts))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(existing)) {
		ts := existing[key]
		why := ""
		if !p.stillDeclares(ts) {
			why = fmt.Sprintf("resource %q left the Bundle", ts.Spec.Resource)
		} else if desiredItems[key] && ts.DeletionTimestamp.IsZero() {
			why = "the item is desired again"
		}
		if why == "" {
			pd := p.r.Engine.TombstonePending(ts)
			if !ready && ts.DeletionTimestamp.IsZero() {
				// The Tombstone controller holds it too (bundleReady).
				pd.Message += limbov1alpha1.PendingMessageHeld + limbov1alpha1.PendingMessageWaitingForReady
			}
			p.pending = append(p.pending, pd)
			continue
		}
		if !p.stillInShard(ctx) {
			return
		}
		if err := p.r.Engine.CancelTombstone(ctx, p.bundle, ts, why); err != nil {
			p.fail(err)
			p.pending = append(p.pending, p.r.Engine.TombstonePending(ts))
		}
	}
	p.processUnjudgedItems(ctx)
}

// MaxTombstonesPerResource bounds the Tombstones of one plugin resource. Its
// items come from a system the Bundle's author may run, which can name new
// orphans on every poll (the ones before, no longer listed, keep their
// countdowns): each is a Tombstone that etcd and every controller's cache keep,
// for the whole delay. Far more than a cleanup job's orphans (a StorageOS
// cluster's namespaces, a router's routes, a cluster's nodes).
const MaxTombstonesPerResource = 10000

// newOrphanItems is the orphans of resource that have no Tombstone among
// existing (the Bundle's, by TombstoneKey) yet, as many as
// MaxTombstonesPerResource leaves room for, and how many it holds back.
func newOrphanItems(resource string, orphans []plugin.ExternalItem, existing map[string]*limbov1alpha1.Tombstone) (items []plugin.ExternalItem, held int) {
	count := 0
	for _, ts := range existing {
		if ts.Spec.Resource == resource {
			count++
		}
	}
	for _, item := range orphans {
		if _, ok := existing[softdelete.TombstoneKey(resource, item.ExternalItem)]; ok {
			continue
		}
		if count >= MaxTombstonesPerResource {
			held++
			continue
		}
		items = append(items, item)
		count++
	}
	return items, held
}

// tombstones lists the Bundle's Tombstones by the orphan each stands for, from
// the cache. The cache shows only this controller's shard, and a Tombstone made
// before the Bundle moved to this shard keeps the old shard's label: when the
// previous status lists a Tombstone the cache does not hold (tombstonesUnseen),
// the Bundle's Tombstones are listed from the API server too, and those found
// there only are moved into this shard (Engine.Relabel), so that its
// passes, not the old shard's Tombstone controller, judge them from then on
// (cancel them when their item is desired again or their resource leaves). A
// pass whose status names only Tombstones the cache holds asks nothing. A failed
// move is an error of the pass; the Tombstone is judged all the same (its
// removal is guarded by its resourceVersion).
func (p *pass) tombstones(ctx context.Context) (map[string]*limbov1alpha1.Tombstone, error) {
	var list limbov1alpha1.TombstoneList
	if err := p.r.Client.List(ctx, &list, client.InNamespace(p.bundle.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: p.bundle.Name}); err != nil {
		return nil, fmt.Errorf("list Tombstones: %w", err)
	}
	out := map[string]*limbov1alpha1.Tombstone{}
	names := map[string]bool{}
	controlled := softdelete.ControlledBy(p.bundle.UID)
	for i := range list.Items {
		ts := &list.Items[i]
		if v, _ := controlled(ts); v == softdelete.Claimed {
			out[softdelete.TombstoneKey(ts.Spec.Resource, ts.Spec.Item)] = ts
			names[ts.Name] = true
		}
	}
	if !tombstonesUnseen(p.bundle, names) {
		return out, nil
	}
	var fresh limbov1alpha1.TombstoneList
	if err := p.r.APIReader.List(ctx, &fresh, client.InNamespace(p.bundle.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: p.bundle.Name}); err != nil {
		return nil, fmt.Errorf("list Tombstones the status names and the cache does not show: %w", err)
	}
	found := map[string]*limbov1alpha1.Tombstone{}
	for i := range fresh.Items {
		ts := &fresh.Items[i]
		key := softdelete.TombstoneKey(ts.Spec.Resource, ts.Spec.Item)
		if _, ok := out[key]; ok {
			continue
		}
		if v, _ := controlled(ts); v == softdelete.Claimed {
			found[key] = ts
		}
	}
	// The listing may show what the shard the Bundle moved to wrote since the
	// pass last asked (stillInShardAfter): what it found is the pass's only if
	// the Bundle is still this shard's after it.
	if len(found) == 0 || !p.stillInShardAfter(ctx) {
		return out, nil
	}
	for _, key := range slices.Sorted(maps.Keys(found)) {
		ts := found[key]
		if err := p.r.Engine.Relabel(ctx, p.bundle, ts); err != nil {
			p.fail(err)
		}
		out[key] = ts
	}
	return out, nil
}

// tombstonesUnseen reports whether b's previous pendingDeletions lists a
// Tombstone of b's namespace that cached (the names of the Tombstones the cache
// holds) lacks.
func tombstonesUnseen(b *limbov1alpha1.Bundle, cached map[string]bool) bool {
	for _, pd := range b.Status.PendingDeletions {
		gvk := schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind)
		if pd.Cluster == "" && gvk == limbov1alpha1.TombstoneGVK && (pd.Namespace == "" || pd.Namespace == b.Namespace) && !cached[pd.Name] {
			return true
		}
	}
	return false
}

// stillDeclares reports whether the Bundle's spec still has the plugin resource
// that made ts. It reads the spec as written, so it answers even for a spec
// with errors: removing a cleanup job stops its deletions in any case.
func (p *pass) stillDeclares(ts *limbov1alpha1.Tombstone) bool {
	res := p.bundle.PluginResource(ts.Spec.Resource)
	return res != nil && res.Plugin.Name == ts.Spec.Plugin
}

// cancelTombstonesOfRemovedResources cancels the Tombstones of plugin resources
// that left the spec, for a pass that stops at spec errors.
func (p *pass) cancelTombstonesOfRemovedResources(ctx context.Context) {
	existing, err := p.tombstones(ctx)
	if err != nil {
		p.failUndecided(err)
		return
	}
	for _, key := range slices.Sorted(maps.Keys(existing)) {
		ts := existing[key]
		if p.stillDeclares(ts) {
			continue
		}
		if !p.stillInShard(ctx) {
			return
		}
		if err := p.r.Engine.CancelTombstone(ctx, p.bundle, ts, fmt.Sprintf("resource %q left the Bundle", ts.Spec.Resource)); err != nil {
			p.fail(err)
		}
	}
}

// collect records an engine outcome in the pass's outputs: its entry, when to
// come back for a countdown's end (wakeAt, an instant: the time spent on other
// objects since it was decided does not make it late), and whether to read and
// decide again — after conflictRetry, not at once: the newer version reaches
// the cache with its watch event (seconds after an API server restart), and a
// pass each millisecond until then, served before the event-driven ones and
// starting a plugin plan each time, would only meet the same Conflict.
func (p *pass) collect(pending *limbov1alpha1.PendingDeletion, wakeAt time.Time, readAgain bool, err error) {
	if pending != nil {
		p.pending = append(p.pending, *pending)
	}
	if !wakeAt.IsZero() {
		p.atDeadline(wakeAt)
	}
	if readAgain {
		p.after(conflictRetry)
	}
	p.fail(err)
}
