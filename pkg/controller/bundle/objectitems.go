package bundle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/restmappings"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Plugin object items — Kubernetes objects a plugin inventories but does not own
// (DESIGN.md §5) — are decided here, in their Bundle's pass, by the one state
// machine (softdelete.Engine.ProcessItems). They carry limbo.dev/pluginResource,
// never limbo.dev/bundle: the reaper never sees them.

// processObjectItems decides the object items of a plugin resource whose plan
// succeeded: cancels for desired items; stamps, waits and deletes for orphans once
// every resource is Ready (ready), through the plugin's gate.
func (p *pass) processObjectItems(ctx context.Context, out pluginOutcome, ready bool) {
	if out.inventory == nil || len(out.inventory.Objects) == 0 {
		return
	}
	// Asked before the first write, as every write of a pass is: a stamp by a
	// pass whose Bundle left the shard is recorded by no status (the shard's
	// pass writes none), and only the status says where its items are. Items
	// all desired and none in limbo — node-removal's at rest — write nothing,
	// and ask nothing.
	if mayWrite := slices.ContainsFunc(out.inventory.Objects, func(it plugin.ObjectItem) bool {
		return !it.Desired || softdelete.HasLimboMark(it.Object)
	}); mayWrite && !p.stillInShard(ctx) {
		return
	}
	// An item whose deadline came before the Bundle was made carries the stamp
	// of an earlier Bundle of its name whose teardown did not take it out of
	// limbo (its finalizer removed by hand): its countdown starts again.
	set := softdelete.ItemSet{Owner: softdelete.ItemOwner(client.ObjectKeyFromObject(p.bundle), out.res.Name), Delay: out.res.Plugin.DeletionDelay, Items: out.inventory.ObjectItems(),
		NotBefore: p.bundle.CreationTimestamp.Time, LeaveBundlesObjects: true}
	if !ready {
		set.Hold = limbov1alpha1.PendingMessageWaitingForReady
	}
	gate, _ := out.plugin.(plugin.DeleteGate)
	set.MayDelete = func(ctx context.Context, group string) (string, error) {
		if hold, err := p.itemsDecidedOnCurrent(ctx); hold != "" || err != nil {
			return hold, err
		}
		if gate == nil {
			return "", nil
		}
		return plugin.WithTimeout(ctx, func(ctx context.Context) (string, error) { return gate.MayDelete(ctx, out.req, group) })
	}
	ictx, cancel := context.WithTimeout(ctx, itemsBudget)
	res := p.r.Engine.ProcessItems(ictx, p.bundle, set)
	cancel()
	p.pending = append(p.pending, res.Pending...)
	p.collect(nil, res.WakeAt, false, res.Err)
	if res.ReadAgain {
		// Not at once: a Conflict that persists (something else writes the item
		// all the time) would re-run the plan back to back.
		p.after(conflictRetry)
	}
}

// itemsDecidedOnCurrent holds a group's due items (a non-empty hold) unless
// the Bundle, read again from the API server, is still the one this pass
// decided on: the same UID and generation, not being deleted, still in this
// controller's shard. The pass read its Bundle from the cache, and the items
// came from a plan of that spec: a Bundle deleted meanwhile ("removing a
// cleanup job stops its deletions"), its plugin resource removed, its delay
// raised, must not have a removed node's records deleted on the spec before —
// the Bundle's own orphans were kept in that case (stillOrphan), its plugin's
// items were not. Asked once per group with a due item: nothing is due, no
// read. The Bundle's change brings the pass that decides on it.
func (p *pass) itemsDecidedOnCurrent(ctx context.Context) (hold string, err error) {
	_, current, err := p.bundleAsDecided(ctx)
	if err != nil {
		return "", fmt.Errorf("read the Bundle again before deleting its plugin's items: %w", err)
	}
	if !current || !p.stillInShard(ctx) {
		return "the Bundle changed since this pass read it: decided again by the next pass", nil
	}
	return "", nil
}

// processUnjudgedItems handles the Bundle's object items in limbo that no plugin
// judged in this pass (its plan failed or is still running, or it no longer lists
// them): they keep
// their countdown and their line in pendingDeletions, and are never deleted
// unjudged; those of a plugin resource that left the Bundle are cancelled. Only
// entries of the previous status that this pass did not produce are looked up,
// so a steady state costs no request.
func (p *pass) processUnjudgedItems(ctx context.Context) {
	listed := map[string]bool{}
	for _, pd := range p.pending {
		listed[pendingKey(pd)] = true
	}
	unlisted := func(pd limbov1alpha1.PendingDeletion) bool { return !listed[pendingKey(pd)] }
	kinds := itemLookup(&p.bundle.Status, unlisted)
	if len(kinds) == 0 {
		return
	}
	// From the API server's watch cache (resourceVersion 0): entries of managed
	// objects deleted in this pass land here too, and a full read of their kinds
	// on each would cost etcd a scan. The cache may not show an item's stamp
	// yet: an entry it leaves out, that is not an object this pass saw go, is
	// looked up again from etcd, once — dropped, the entry of a resource that
	// left was nobody's to look for again, and the item kept its stamp for good
	// (a resource of that name added again found it long due).
	items, err := p.r.objectItemsInLimbo(ctx, p.bundle, kinds, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err == nil {
		items, err = p.itemsTheWatchCacheMissed(ctx, items, unlisted)
	}
	if err != nil {
		p.after(retryInterval)
		p.keepPreviousPending() // visible meanwhile, and looked for again
		return
	}
	for _, item := range items {
		if listed[objectPendingKey(item)] {
			continue
		}
		_, resource, _ := softdelete.SplitItemOwner(item.GetAnnotations()[limbov1alpha1.AnnotationPluginResource])
		// An object the status does not vouch for — another tenant's naming this
		// Bundle, or, rarely, a real item whose entry the status lost — is never
		// listed. One of a resource that left is still cancelled (cancelling never
		// deletes): a real one kept stamped would be due at once for a resource of
		// that name added again; its refusal (another tenant's object) is only
		// logged, not retried.
		vouched := vouchedItem(p.bundle, item)
		if res := p.plan.Resources[resource]; res == nil || res.Plugin == nil {
			if !p.stillInShard(ctx) {
				return
			}
			err := p.r.Engine.CancelItem(ctx, p.bundle, item, fmt.Sprintf("resource %q left the Bundle", resource))
			switch {
			case err == nil:
				continue
			case !vouched:
				log.FromContext(ctx).V(1).Info("could not cancel an object in limbo that names the Bundle in "+limbov1alpha1.AnnotationPluginResource+" but that its status does not vouch for",
					"object", objectPendingKey(item), "error", err.Error())
				continue
			}
			p.after(retryInterval)
		}
		if !vouched {
			continue
		}
		p.pending = append(p.pending, *p.r.Engine.Pending(item,
			fmt.Sprintf("not judged by resource %q in this pass (its plan failed, is still running, or left it out): the countdown is kept, and %s", resource, limbov1alpha1.PendingMessageNotJudged)))
	}
}

// itemsTheWatchCacheMissed is items, the Bundle's object items in limbo as the
// API server's watch cache answered, with the kinds of the previous status's
// entries that want keeps and that answer left out listed again from etcd:
// unless the status's list is cut (every kind is then looked up, and a miss
// tells nothing), and but for the objects of the Bundle this pass saw go or
// declares (p.gone, p.declared: its own deletions and cancels, the common
// case, cost nothing more).
func (p *pass) itemsTheWatchCacheMissed(ctx context.Context, items []*metav1.PartialObjectMetadata, want func(limbov1alpha1.PendingDeletion) bool) ([]*metav1.PartialObjectMetadata, error) {
	if p.bundle.Status.PendingDeletionsCut() {
		return items, nil
	}
	found := map[string]bool{}
	for _, item := range items {
		found[objectPendingKey(item)] = true
	}
	var missed []limbov1alpha1.PendingDeletion
	for _, pd := range p.bundle.Status.PendingDeletions {
		gvk := schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind)
		// Only an item the Bundle stamped is in the listing: an entry
		// without a countdown (held, left to a Bundle) or with another
		// owner's (MsgLeftToOwner) is in none.
		if pd.Cluster != "" || gvk == limbov1alpha1.TombstoneGVK || pd.DeletionTimestamp == nil || strings.HasSuffix(pd.Message, softdelete.MsgLeftToOwner) ||
			!want(pd) || found[pendingKey(pd)] {
			continue
		}
		if key := entryObjectKey(pd); pd.Namespace == p.bundle.Namespace && (p.gone[key] || p.declared[key] != "") {
			continue
		}
		missed = append(missed, pd)
	}
	if len(missed) == 0 {
		return items, nil
	}
	kinds := kindsOfEntries(missed)
	again, err := p.r.objectItemsInLimbo(ctx, p.bundle, kinds)
	if err != nil {
		return nil, err
	}
	relisted := map[schema.GroupKind]bool{} // a kind may be listed at another version than an entry names
	for _, gvk := range kinds {
		relisted[gvk.GroupKind()] = true
	}
	out := slices.DeleteFunc(items, func(item *metav1.PartialObjectMetadata) bool { return relisted[item.GroupVersionKind().GroupKind()] })
	return append(out, again...), nil
}

// cancelObjectItems takes b's object items out of limbo at its teardown, never
// deleting them, whatever the cascade mode, like its Tombstones: removing a
// cleanup job stops its deletions, and nobody else would decide them. The items
// of the plugin resources in tearingDown (those with a teardown, which stamps its
// items itself) are left to their teardown; so are items of other clusters.
//
// Every object that names b in limbo.dev/pluginResource is cancelled (the safe
// direction: cancelling never deletes), but a failed cancel does not stop the
// others, nor, mostly, the teardown: anyone who may write an object can make it
// name b, and b's ServiceAccount may not write it. One that b's status does not
// vouch for (vouchedItem) is only logged; the others are failures, returned for
// the DeletionFailure condition and told by a CancelFailed Warning, and the item
// keeps limbo's marks (nothing deletes it: the reaper never acts on plugin
// items). err is non-nil, and the teardown is retried before it goes on, only
// for a failure that clears by itself (not a refusal) of an item b vouches for
// (holdsTeardown).
func (r *Reconciler) cancelObjectItems(ctx context.Context, b *limbov1alpha1.Bundle, tearingDown map[string]bool) (failures []string, err error) {
	kinds := itemLookup(&b.Status, func(pd limbov1alpha1.PendingDeletion) bool { return !tearingDown[pd.Resource] })
	items, err := r.objectItemsInLimbo(ctx, b, kinds) // fresh: the last look
	if err != nil {
		return nil, err
	}
	var hold error
	for _, item := range items {
		_, resource, _ := softdelete.SplitItemOwner(item.GetAnnotations()[limbov1alpha1.AnnotationPluginResource])
		if tearingDown[resource] {
			continue
		}
		err := r.Engine.CancelItem(ctx, b, item, "the Bundle is being deleted")
		if err == nil {
			continue
		}
		if !vouchedItem(b, item) {
			log.FromContext(ctx).Info("could not cancel an object in limbo that names the Bundle in "+limbov1alpha1.AnnotationPluginResource+" but that its status does not vouch for: left as it is",
				"object", objectPendingKey(item), "error", err.Error())
			continue
		}
		if holdsTeardown(err) {
			hold = errors.Join(hold, err)
			continue
		}
		msg := fmt.Sprintf("plugin resource %s: an item's deletion could not be cancelled, and it stays marked in limbo (nothing deletes it): %v", resource, err)
		r.Recorder.Event(b, corev1.EventTypeWarning, limbov1alpha1.EventCancelFailed, msg)
		failures = append(failures, msg)
	}
	return failures, hold
}

// vouchedItem reports whether item, an object found in limbo whose
// limbo.dev/pluginResource names b, is b's as far as limbo can tell: the
// annotation alone proves nothing, since whoever may write an object can write
// it. item is b's when it is cluster-scoped or in b's namespace (objects only
// cluster-wide rights or b's own namespace's writers can write: no other tenant
// can forge those), or when b's last status lists it (a pass wrote that entry
// when b's plugin judged the item). Not vouched for: an object in another
// namespace that the status does not list — another tenant's forgery, or, rarely,
// a real item whose entry the status lost (its list cut at
// MaxPendingDeletionsListed, or a pass's status write that failed after a
// stamp). Such an object is never listed in b's status nor decided; it is
// cancelled when its resource leaves b and at b's teardown, and a failure then
// is only logged.
func vouchedItem(b *limbov1alpha1.Bundle, item client.Object) bool {
	if ns := item.GetNamespace(); ns == "" || ns == b.Namespace {
		return true
	}
	return listedItem(&b.Status, item)
}

// listedItem reports whether st lists item, an object of this cluster, in
// pendingDeletions (by group, kind, namespace and name: the entry's version may
// be another served one).
func listedItem(st *limbov1alpha1.BundleStatus, item client.Object) bool {
	gk := item.GetObjectKind().GroupVersionKind().GroupKind()
	for _, pd := range st.PendingDeletions {
		if pd.Cluster == "" && pd.Namespace == item.GetNamespace() && pd.Name == item.GetName() &&
			schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind).GroupKind() == gk {
			return true
		}
	}
	return false
}

// holdsTeardown reports whether err, from cancelling an item its Bundle vouches
// for at the Bundle's teardown, holds the teardown until a retry succeeds: an
// error that clears by itself (a Conflict with a writer of the item — csi-baremetal
// rewrites its Volumes —, a timeout, an unavailable API server), wherever the
// item is. A refusal (Forbidden, Invalid: the Bundle's ServiceAccount may not, or
// a webhook says no, with a 409 of its own reason too; a policy that changes
// limbo's marks in every answer) never clears by retrying. An item the status does not vouch
// for never holds it (another tenant could write it).
func holdsTeardown(err error) bool {
	return !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsMethodNotSupported(err) && !apiconflict.Denied(err) &&
		!errors.Is(err, softdelete.ErrMarksNotKept)
}

// objectItemsInLimbo lists, from the API server, the objects of kinds that are in
// limbo for one of b's plugin resources, in any namespace.
//
// kinds come from b's status, whose versions may no longer be served (a CRD
// that moved to v2): each kind is listed at one served version
// (servedVersions), and a 404 counts as the kind's end only when discovery
// confirms it (listError). Either taken for "no items" lost the items for
// good: their entries left the status, which alone says where to look, and
// they kept their stamp, due at once for a resource of that name added again.
func (r *Reconciler) objectItemsInLimbo(ctx context.Context, b *limbov1alpha1.Bundle, kinds []schema.GroupVersionKind, opts ...client.ListOption) ([]*metav1.PartialObjectMetadata, error) {
	key := client.ObjectKeyFromObject(b)
	var out []*metav1.PartialObjectMetadata
	for _, gvk := range r.servedVersions(kinds) {
		items, err := limboscan.List(ctx, r.APIReader, gvk, "", nil, opts...)
		if err = r.listError(gvk, err); err != nil {
			if restmappings.NotServed(err) {
				continue // the kind is gone from the API server: so are its objects
			}
			return nil, fmt.Errorf("list %s in limbo: %w", gvk.Kind, err)
		}
		for i := range items {
			if owner, _, ok := softdelete.SplitItemOwner(items[i].GetAnnotations()[limbov1alpha1.AnnotationPluginResource]); ok && owner == key {
				out = append(out, &items[i])
			}
		}
	}
	return out, nil
}

// itemLookup is the kinds to look for a Bundle's plugin object items in limbo
// by, from the status st a pass last wrote: those of its entries of this
// cluster that are no Tombstone and that want keeps — or, when st's list is cut
// (PendingDeletionsCut), every kind st records (ManagedKinds holds the kinds of
// all its entries) but Tombstone, since an entry it leaves out may be of any of
// them: looked for by the listed entries alone, such an item would never be
// cancelled.
func itemLookup(st *limbov1alpha1.BundleStatus, want func(limbov1alpha1.PendingDeletion) bool) []schema.GroupVersionKind {
	if st.PendingDeletionsCut() {
		var kinds []schema.GroupVersionKind
		for _, k := range st.ManagedKinds {
			if gvk := schema.FromAPIVersionAndKind(k.APIVersion, k.Kind); gvk != limbov1alpha1.TombstoneGVK {
				kinds = append(kinds, gvk)
			}
		}
		return kinds
	}
	var entries []limbov1alpha1.PendingDeletion
	for _, pd := range st.PendingDeletions {
		if pd.Cluster == "" && schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind) != limbov1alpha1.TombstoneGVK && want(pd) {
			entries = append(entries, pd)
		}
	}
	return kindsOfEntries(entries)
}

// kindsOfEntries is the distinct kinds of pendingDeletions entries, in order.
func kindsOfEntries(entries []limbov1alpha1.PendingDeletion) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, pd := range entries {
		gvk := schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind)
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out
}

// pendingKey identifies a pendingDeletions entry; objectPendingKey the entry obj
// would have.
func pendingKey(pd limbov1alpha1.PendingDeletion) string {
	return pd.APIVersion + "/" + pd.Kind + "/" + pd.Namespace + "/" + pd.Name
}

func objectPendingKey(obj client.Object) string {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return pendingKey(limbov1alpha1.PendingDeletion{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()})
}
