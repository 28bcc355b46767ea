package bundle

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// decideObjectOrphans finds the objects this Bundle controls that left its spec
// and, once every resource is Ready, hands them to the soft-delete engine. It
// reports whether deletions are allowed (ready), and whether the orphans could
// be listed at all (if not, the pass keeps the last pendingDeletions and decides
// nothing more).
func (p *pass) decideObjectOrphans(ctx context.Context) (ready, listed bool) {
	for key, res := range p.staleDeclared { // every resource has declared its own
		if _, ok := p.declared[key]; !ok {
			p.declared[key] = res
		}
	}
	orphans, err := p.r.orphans(ctx, p.bundle, p.kindList(ctx), p.declared)
	if err != nil {
		err = fmt.Errorf("list orphans: %w", err)
		p.failUndecided(err)
		p.keepPreviousPending()
		return false, false
	}
	orphans = slices.DeleteFunc(orphans, p.heldByAResource)
	orphans = p.notIdleGenerated(ctx, orphans)
	ready = p.guardEmpty(orphans, p.allReady())
	if !ready {
		if p.emptyGuard {
			p.holdAll(orphans)
			return false, true
		}
		adopted, held := p.adoptedOrphans(ctx, orphans)
		p.holdAll(held)
		p.orphanAll(ctx, adopted, false)
		return false, true
	}
	p.orphanAll(ctx, orphans, true)
	return true, true
}

// heldByAResource reports whether o is, by its UID, the very object a resource
// of this pass holds: listed under another group of its kind — an API server
// may serve one stored kind under two groups, as OpenShift serves rbac's
// RoleBindings as authorization.openshift.io's too —, its key is not the
// declared one. A template moved from one group to the other had the object
// deleted by the pass that applied it, and made again by the next, each pass
// in turn.
func (p *pass) heldByAResource(o *unstructured.Unstructured) bool {
	if p.resourceUIDs == nil {
		p.resourceUIDs = map[string]bool{}
		for _, st := range p.resources {
			if st.Object != nil && st.Object.UID != "" {
				p.resourceUIDs[st.Object.UID] = true
			}
		}
	}
	return p.resourceUIDs[string(o.GetUID())]
}

// adoptedOrphans splits orphans into those another Bundle of the namespace
// declares to adopt (limbo.dev/adopt) and the rest, for a pass whose resources
// are not all Ready. The gate holds back deletions of a half rolled-out Bundle,
// and a hand-over deletes nothing: the object goes on, the adopter's. Held back
// too, two Bundles that swap objects wait for each other for good — each one's
// resource of the other's object is ControlledByOther, not Ready, so neither
// hands over what the other waits for. So a Bundle that is not Ready still
// counts down the orphans another Bundle declares to adopt, and hands them over
// at the deadline; one whose adopter has gone by then is held as the rest
// (stillOrphan). A failed lookup holds the orphan, and the pass retries.
func (p *pass) adoptedOrphans(ctx context.Context, orphans []*unstructured.Unstructured) (adopted, held []*unstructured.Unstructured) {
	for _, o := range orphans {
		adopter, err := p.adopters.of(ctx, o)
		p.fail(err)
		if adopter != nil {
			adopted = append(adopted, o)
		} else {
			held = append(held, o)
		}
	}
	return adopted, held
}

// entryObjectKey is the objectKey of a pendingDeletions entry's object (entries
// of one object under two versions of its kind have one key).
func entryObjectKey(pd limbov1alpha1.PendingDeletion) string {
	return bundlespec.ObjectKey(schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind).GroupKind(), pd.Name)
}

// guardEmpty is ready, unless orphans would be deleted by a spec without
// resources that does not say spec.allowEmpty: an empty spec more likely means a
// broken render than "delete it all" (p.emptyGuard then holds them).
func (p *pass) guardEmpty(orphans []*unstructured.Unstructured, ready bool) bool {
	if len(orphans) > 0 && len(p.bundle.Spec.Resources) == 0 && !p.bundle.Spec.AllowEmpty {
		p.emptyGuard = true
		return false
	}
	return ready
}

// holdAll lists orphans as pending, held back by the readiness gate or by the
// guard against an emptied spec.
func (p *pass) holdAll(orphans []*unstructured.Unstructured) {
	msg := limbov1alpha1.PendingMessageWaitingForReady
	if p.emptyGuard {
		msg = limbov1alpha1.PendingMessageEmptyBundle
	}
	for _, o := range orphans {
		p.pending = append(p.pending, *p.r.Engine.Pending(o, msg))
	}
}

// decideUnseenOrphans asks the API server for the objects the Bundle controls
// of the kinds this pass could not account for, and decides those no pass
// listed as orphans (ready: deletions allowed). The cache shows only this
// controller's shard: what a Bundle left in limbo before it moved to another
// shard keeps the old shard's label, and the new shard's passes found it
// nowhere — neither listed nor deleted at its deadline, and when it was the last
// of its kind, the kind left the status and with it the teardown's only way to
// find it (its check with the API server lists the kinds the status names): the
// Bundle went with it still controlled, and the garbage collector deleted it at
// once, its delay ignored. The kinds asked about (metadata, by the Bundle's
// label) are those that would leave status.managedKinds, those of the
// previous pendingDeletions entries of this namespace that this pass neither
// listed nor saw go (a forced delete outside a pass, one listing), and, when
// the previous status.resources names an object this pass neither declared nor
// accounted for (a resource dropped in the write that moved the Bundle to this
// shard: its object was never in limbo, and its kind stays; see
// unaccountedResourceObjects), every kind the status names: a pass that changes
// nothing asks nothing. A sharded controller's first such pass of a Bundle asks
// about every kind the Bundle uses, hints or not (onboardedBundles). What they
// find is moved into this shard (Engine.Relabel), so that the next pass
// sees it in the cache. A failed listing keeps the kinds.
func (p *pass) decideUnseenOrphans(ctx context.Context, ready bool) {
	listed := map[string]bool{}
	for _, pd := range p.pending {
		listed[entryObjectKey(pd)] = true
	}
	// Accounted for: listed by this pass, gone in it, or declared.
	accounted := func(key string) bool { return listed[key] || p.gone[key] || p.declared[key] != "" }
	staying := map[schema.GroupKind]bool{}
	for _, k := range p.managedKinds() {
		staying[schema.FromAPIVersionAndKind(k.APIVersion, k.Kind).GroupKind()] = true
	}
	ask := map[schema.GroupVersionKind]bool{}
	for _, k := range kindsOf(p.bundle, nil) {
		if !staying[k.GroupKind()] {
			ask[k] = true
		}
	}
	for _, pd := range p.bundle.Status.PendingDeletions {
		gvk := schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind)
		if pd.Cluster == "" && pd.Namespace == p.bundle.Namespace && gvk != limbov1alpha1.TombstoneGVK && !accounted(entryObjectKey(pd)) {
			ask[gvk] = true
		}
	}
	if unaccountedResourceObjects(p.bundle, accounted) {
		for _, k := range kindsOf(p.bundle, nil) {
			ask[k] = true
		}
	}
	// A sharded controller's first such pass of the Bundle asks about every
	// kind it uses (onboardedBundles).
	onboarding := p.r.Shard != nil && !p.r.onboarded.has(p.bundle)
	if onboarding {
		for _, k := range kindsOf(p.bundle, p.plan) {
			ask[k] = true
		}
		for k := range p.kinds {
			ask[k] = true
		}
	}
	if len(ask) == 0 {
		if onboarding {
			p.r.onboarded.add(p.bundle)
		}
		return
	}
	kinds := sortedKinds(ask)
	fresh, err := p.r.labelledFresh(ctx, p.bundle, kinds)
	if err != nil {
		err = fmt.Errorf("list the Bundle's objects with the API server: %w", err)
		p.keptKinds = append(p.keptKinds, kinds...)
		p.failUndecided(err) // what only it would show is not decided
		return
	}
	// Strays: what the status records that no listing by the Bundle's label
	// shows, the Bundle still controlling it (recordedStrays).
	inFresh := keysOf(fresh)
	strays, err := p.r.recordedStrays(ctx, p.bundle, func(key string) bool { return accounted(key) || inFresh[key] })
	if err != nil {
		p.keptKinds = append(p.keptKinds, kinds...)
		p.failUndecided(err)
		return
	}
	fresh = append(fresh, strays...)
	// Moved in: every object found outside the shard, declared or not. A
	// declared one that this pass did not apply (Blocked, failed) is not moved
	// by an apply, and once it leaves the spec the cache would not show it.
	var orphans, outside []*unstructured.Unstructured
	for _, o := range controlledBy(p.bundle, fresh) {
		if !accounted(objectKey(o)) && !p.heldByAResource(o) {
			orphans = append(orphans, o)
		}
		if !p.r.Shard.Matches(o.GetLabels()) {
			outside = append(outside, o)
		}
	}
	// The listing is a read: the shard check guards what it leads to, asked
	// after it (stillInShardAfter). A Bundle with nothing unaccounted — every
	// Bundle at a sharded controller's restart, as a rule — costs this
	// listing alone.
	if (len(orphans) > 0 || len(outside) > 0) && !p.stillInShardAfter(ctx) {
		p.keptKinds = append(p.keptKinds, kinds...)
		return
	}
	if onboarding {
		p.r.onboarded.add(p.bundle)
	}
	for _, o := range outside {
		if err := p.r.Engine.Relabel(ctx, p.bundle, o); err != nil {
			p.fail(err)
		}
	}
	orphans = p.notIdleGenerated(ctx, orphans)
	if !p.guardEmpty(orphans, ready) {
		p.holdAll(orphans)
		return
	}
	p.orphanAll(ctx, orphans, true)
}

// unaccountedResourceObjects reports whether b's previous status names, as a
// resource's object (status.resources), an object of b's namespace that
// accounted (this pass declared it, listed it in limbo or saw it go) does not
// know: a resource that left the spec whose object the cache did not show as an
// orphan. That is a Bundle moved to this shard in the same write that dropped
// the resource (its object carries the old shard's label, which the cache does
// not select), or an object that never was (a resource that never got to
// create it). A generator's entry names its first object only, so the caller
// asks about every kind the status names, not just the named object's.
func unaccountedResourceObjects(b *limbov1alpha1.Bundle, accounted func(key string) bool) bool {
	for _, st := range b.Status.Resources {
		o := st.Object
		if o == nil || (o.Namespace != "" && o.Namespace != b.Namespace) {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
		if gvk == limbov1alpha1.TombstoneGVK {
			continue
		}
		if !accounted(bundlespec.ObjectKey(gvk.GroupKind(), o.Name)) {
			return true
		}
	}
	return false
}

// orphanAll hands every orphan to the soft-delete engine, at most
// Reconciler.ApplyConcurrency at a time, as the objects of a wave are applied:
// a change that drops many objects, or countdowns that end in the same second,
// cost about one round trip, not one per object. Each orphan is its own object
// with its own fresh read and claim, so their order does not matter; the
// outcomes are recorded in the listed order, for a deterministic status.
// ready is the readiness gate's verdict: when false, an orphan is only handed
// over, never deleted (see adoptedOrphans).
func (p *pass) orphanAll(ctx context.Context, orphans []*unstructured.Unstructured, ready bool) {
	if len(orphans) == 0 || !p.stillInShard(ctx) {
		return
	}
	if p.lastResources == nil {
		p.lastResources = lastResourcesOf(p.bundle)
	}
	resources := make([]string, len(orphans))
	outcomes := make([]softdelete.Outcome, len(orphans))
	p.concurrently(len(orphans), func(i int) {
		o := orphans[i]
		resources[i] = p.lastResources.of(o)
		octx := log.IntoContext(ctx, log.FromContext(ctx).WithValues("resource", resources[i]))
		outcomes[i] = p.r.Engine.Orphan(octx, p.bundle, o, p.stillOrphan(octx, o, ready))
	})
	for i, out := range outcomes {
		if out.Held {
			// Due, and no adopter any more: the readiness gate holds it.
			p.holdAll(orphans[i : i+1])
			continue
		}
		if out.Gone {
			p.r.applied.forget(orphans[i].GetUID())
			p.gone[objectKey(orphans[i])] = true
		}
		if out.Pending != nil {
			out.Pending.Resource = resources[i]
		}
		p.collect(out.Pending, out.WakeAt, out.ReadAgain, out.Err)
	}
}

// stillOrphan is the claim of the engine's fresh read before it deletes orphan o:
// the Bundle still controls o, and the Bundle, read again from the API server at
// that moment, has the spec this pass decided on. The pass decided on its cached
// Bundle: o declared again since then (or the spec emptied) must not be deleted,
// and the Bundle's change starts the pass that decides on it. Until then o is
// still the Bundle's and stays listed (ClaimDeferred): a teardown finds its
// objects through the kinds the status names, and a Bundle deleted at that
// moment must not go without o, which the garbage collector would then delete
// behind limbo's back. A failed read defers too, with its error (the entry says
// it, and the pass fails and comes back).
// The one window left is between this read and the DELETE: no precondition
// spans two objects. Unless ready (the readiness gate's verdict), o may only be
// handed over: without an adopter it is held (ClaimHeld), not deleted.
func (p *pass) stillOrphan(ctx context.Context, o client.Object, ready bool) softdelete.Claim {
	controlled := softdelete.ControlledBy(p.bundle.UID)
	return func(fresh metav1.Object) (softdelete.ClaimVerdict, error) {
		if v, err := controlled(fresh); v != softdelete.Claimed {
			return v, err
		}
		cur, current, err := p.bundleAsDecided(ctx)
		if err != nil {
			return softdelete.ClaimDeferred, fmt.Errorf("read the Bundle again before deleting %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		if !current {
			log.FromContext(ctx).V(1).Info("not deleted: the Bundle changed since the pass read it", "object", o.GetName(),
				"generation", p.bundle.Generation, "now", cur.Generation)
			return softdelete.ClaimDeferred, nil
		}
		v, err := p.handOver(ctx, o, fresh)
		if v == softdelete.Claimed && !ready {
			return softdelete.ClaimHeld, nil
		}
		return v, err
	}
}

// handOver gives orphan o (fresh, as just read) to another Bundle of the
// namespace that declares it to adopt it (limbo.dev/adopt), instead of deleting
// it: the other Bundle cannot adopt an object this one controls, and deleting it
// would lose what that Bundle asked to keep (a PVC moved from one Bundle to
// another). o is released, as a teardown releases it: the owner reference goes,
// the countdown stays, and the adopter is woken to adopt it, which ends the
// countdown. Until then the reaper holds o for any Bundle that declares it to
// adopt it, and deletes it — it was due — once none does: an adopter deleted, or
// dropping o, before it could adopt o (a dependency not Ready) leaves nothing
// behind. (Disowned and taken out of limbo instead, o was nobody's then, for
// good.) A failed lookup or release keeps o, with the error in its entry (a
// release the Bundle's ServiceAccount may not make is refused for good, until
// someone grants it delete or the adopter goes); a Conflict, o changed since it
// was read, is decided again, as is a fresh read that is no longer due.
func (p *pass) handOver(ctx context.Context, o client.Object, fresh metav1.Object) (softdelete.ClaimVerdict, error) {
	gvk := o.GetObjectKind().GroupVersionKind()
	adopter, err := p.adopters.of(ctx, o)
	switch {
	case err != nil:
		return softdelete.ClaimDeferred, err
	case adopter == nil:
		return softdelete.Claimed, nil // the engine decides again on the fresh read
	case fresh.GetDeletionTimestamp() != nil || !softdelete.Due(p.r.Clock.Now(), fresh):
		// The claim runs before the engine decides again on the fresh read:
		// a delay put on or raised (or made invalid) since the cache showed o
		// due, or a deletion under way, is decided by the next pass, not
		// handed over early (or with a countdown that never ends).
		return softdelete.ClaimDeferred, nil
	}
	obj, ok := fresh.(client.Object)
	if !ok {
		return softdelete.ClaimDeferred, fmt.Errorf("hand %s %s over to Bundle %s: the fresh read is no object", gvk.Kind, o.GetName(), adopter.Name)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	switch err := p.r.Engine.Release(ctx, p.bundle, obj, p.bundle, adopter); {
	case apiconflict.Is(err):
		return softdelete.ClaimDeferred, nil
	case client.IgnoreNotFound(err) != nil:
		return softdelete.ClaimDeferred, fmt.Errorf("hand %s %s over to Bundle %s: %w", gvk.Kind, o.GetName(), adopter.Name, err)
	}
	if p.r.alarms != nil {
		p.r.alarms.now(client.ObjectKeyFromObject(adopter))
	}
	return softdelete.NotClaimed, nil
}

// lastResources maps each object a Bundle's last status names to the resource
// that last declared it: its resources, or the pending deletion that carried the
// name on since the resource left the spec. An object is matched by its
// StoredKind and name (any version): two resources may declare objects of one
// kind and name in two groups. A pass and a teardown wave build it once and
// look up each of their objects in it: a scan of the status for each made a
// pass quadratic in the Bundle's size (0.9 s at 5,000 orphans).
type lastResources map[bundlespec.ObjectID]string

// lastResourcesOf is the lastResources of b's last status. The first resource
// to name an object is its resource, else the first pending deletion that names
// it with a resource.
func lastResourcesOf(b *limbov1alpha1.Bundle) lastResources {
	last := lastResources{}
	record := func(apiVersion, kind, name, resource string) {
		id := bundlespec.ObjectIDOf(schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind(), name)
		if _, named := last[id]; !named {
			last[id] = resource
		}
	}
	for _, st := range b.Status.Resources {
		if st.Object != nil {
			record(st.Object.APIVersion, st.Object.Kind, st.Object.Name, st.Name)
		}
	}
	for _, pd := range b.Status.PendingDeletions {
		if pd.Cluster == "" && pd.Resource != "" {
			record(pd.APIVersion, pd.Kind, pd.Name, pd.Resource)
		}
	}
	return last
}

// of is the resource that last declared obj; else, for a generated object (a
// generator's status names its first object only), the generator its
// limbo.dev/generatedBy names.
func (last lastResources) of(obj client.Object) string {
	if resource, named := last[bundlespec.ObjectIDOf(obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetName())]; named {
		return resource
	}
	return obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]
}
