package bundle

import (
	"context"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/restmappings"
)

// kindList is every kind the Bundle uses or used, sorted: its plan's, its
// plugins' generated objects', and those its previous status remembers (a
// resource removed from the spec may have been the last of its kind) — and the
// kinds the controller watches (see withWatchedKinds).
func (p *pass) kindList(ctx context.Context) []schema.GroupVersionKind {
	kinds := map[schema.GroupVersionKind]bool{}
	for k := range p.kinds {
		kinds[k] = true
	}
	for _, k := range kindsOf(p.bundle, p.plan) {
		kinds[k] = true
	}
	return withWatchedKinds(sortedKinds(kinds), p.r.watcher.syncedKinds(ctx))
}

// withWatchedKinds adds to kinds, a Bundle's, every kind in watched (the kinds
// the controller watches for any Bundle, synced) of a group and kind not among
// them, and sorts the result.
//
// A Bundle's spec and status name the kinds of its objects, but a pass creates
// objects before it writes the status: if that write fails and the spec drops
// the resource before a write succeeds, an object the Bundle controls has a kind
// neither names. Its kind is watched since the pass applied it, so listing the
// watched kinds too (from the cache, by the Bundle's label: no request) finds
// it as an orphan, and a teardown finds it before the Bundle goes — the garbage
// collector would delete it outside limbo, its deletionDelay ignored. After a
// restart only the kinds some Bundle names are watched again.
func withWatchedKinds(kinds, watched []schema.GroupVersionKind) []schema.GroupVersionKind {
	set := map[schema.GroupVersionKind]bool{}
	groupKinds := map[schema.GroupKind]bool{}
	for _, k := range kinds {
		set[k] = true
		groupKinds[k.GroupKind()] = true
	}
	sort.Slice(watched, func(i, j int) bool { return watched[i].String() < watched[j].String() })
	for _, k := range watched {
		if !groupKinds[k.GroupKind()] { // one version of a kind lists its objects
			set[k] = true
			groupKinds[k.GroupKind()] = true
		}
	}
	return sortedKinds(set)
}

// kindsOf is every kind b uses or used: its plan's, and those its previous status
// remembers.
func kindsOf(b *limbov1alpha1.Bundle, plan *bundlespec.Plan) []schema.GroupVersionKind {
	kinds := map[schema.GroupVersionKind]bool{}
	if plan != nil {
		for _, res := range plan.Resources {
			if res.Template != nil {
				kinds[res.GVK] = true
			}
		}
	}
	for _, k := range b.Status.ManagedKinds {
		kinds[schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)] = true
	}
	for _, st := range b.Status.Resources {
		if st.Object != nil {
			kinds[schema.FromAPIVersionAndKind(st.Object.APIVersion, st.Object.Kind)] = true
		}
	}
	for _, pd := range b.Status.PendingDeletions {
		if pd.Cluster == "" { // another cluster's kinds are not this one's
			kinds[schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind)] = true
		}
	}
	return sortedKinds(kinds)
}

func sortedKinds(kinds map[schema.GroupVersionKind]bool) []schema.GroupVersionKind {
	// Tombstones are in pendingDeletions too, but they are the engine's own
	// records, handled by decidePluginItems: never orphans to delete.
	delete(kinds, limbov1alpha1.TombstoneGVK)
	out := make([]schema.GroupVersionKind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// controlledBy keeps the objects b controls, in their order.
func controlledBy(b *limbov1alpha1.Bundle, objects []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objects {
		if metav1.IsControlledBy(o, b) {
			out = append(out, o)
		}
	}
	return out
}

// servedVersions is kinds with one version of each group and kind, in their
// order: every version of a kind lists the same objects, so listing two only
// lists each object twice (a pending deletion counted twice, two deletes racing
// at its deadline), and a version the API server stopped serving (a CRD's old
// version set `served: false`) lists none — a teardown that took that for "no
// objects" let its Bundle go, and the garbage collector deleted them, their
// delays ignored. The version kept is the first of the kind's versions in kinds
// that is served, else the kind's preferred version; a kind not served at all,
// or whose mapping fails otherwise, keeps its first version (its listing finds
// nothing, or reports the error).
func (r *Reconciler) servedVersions(kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	versions := map[schema.GroupKind][]string{}
	var order []schema.GroupKind
	for _, k := range kinds {
		gk := bundlespec.StoredKind(k.GroupKind()) // a kind served under two groups is listed once
		if _, ok := versions[gk]; !ok {
			order = append(order, gk)
		}
		versions[gk] = append(versions[gk], k.Version)
	}
	out := make([]schema.GroupVersionKind, 0, len(order))
	for _, gk := range order {
		vs := versions[gk]
		chosen := gk.WithVersion(vs[0])
		switch m, err := r.Mapper.RESTMapping(gk, vs...); {
		case err == nil:
			chosen = m.GroupVersionKind
		case restmappings.NotServed(err):
			if m, err := r.Mapper.RESTMapping(gk); err == nil {
				chosen = m.GroupVersionKind
			}
		}
		out = append(out, chosen)
	}
	return out
}

// labelled lists the objects labelled with b's name, across kinds (one served
// version of each), sorted by kind and name, from the cache.
func (r *Reconciler) labelled(ctx context.Context, b *limbov1alpha1.Bundle, kinds []schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	kinds = r.servedVersions(kinds)
	served := make([]schema.GroupVersionKind, 0, len(kinds))
	for _, gvk := range kinds {
		switch err := r.watcher.ensure(ctx, gvk); {
		case restmappings.NotServed(err):
			continue // as listLabelled: no kind, no objects (a CRD uninstalled)
		case err != nil:
			return nil, err
		}
		served = append(served, gvk)
	}
	return listLabelled(served, func(gvk schema.GroupVersionKind) (client.ObjectList, error) {
		list := cachedList(gvk)
		return list, r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingFields{bundleIndex: b.Name})
	})
}

// labelledFresh is labelled read from the API server, metadata only: it shows
// what a pass wrote a moment ago, which the cache may not show yet. A 404 for
// a kind discovery still serves (or cannot tell about) is an error, not the
// kind's end: the API server answers 404 for a served custom resource for a
// moment at times, and a teardown that took the kind for empty would let its
// Bundle go with an object of it the garbage collector then deletes at once.
func (r *Reconciler) labelledFresh(ctx context.Context, b *limbov1alpha1.Bundle, kinds []schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	return listLabelled(r.servedVersions(kinds), func(gvk schema.GroupVersionKind) (client.ObjectList, error) {
		list := limboscan.MetadataList(gvk)
		err := r.APIReader.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{limbov1alpha1.LabelBundle: b.Name})
		return list, r.listError(gvk, err)
	})
}

// listError is err, from a LIST of gvk read from the API server, with a 404 for
// a kind discovery still serves (or cannot tell about) made an error that is no
// NotFound: the API server answers 404 for a served custom resource for a
// moment at times, and a caller that took the kind for empty would act as if
// its objects were gone. Without Discovery, a 404 is the kind's end.
func (r *Reconciler) listError(gvk schema.GroupVersionKind, err error) error {
	if apierrors.IsNotFound(err) && r.Discovery != nil {
		if _, as, known := limboscan.Serving(r.Discovery, gvk); !known || !as.Empty() {
			// Not wrapped: a NotFound would read as the kind's end.
			return fmt.Errorf("the API server answered 404 for %s, which discovery still serves (retried): %v", gvk.Kind, err)
		}
	}
	return err
}

// listLabelled lists each kind of kinds with list and returns the objects, as
// unstructured objects sorted by kind and name. A kind the API server no longer
// serves has no objects.
func listLabelled(kinds []schema.GroupVersionKind, list func(schema.GroupVersionKind) (client.ObjectList, error)) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, gvk := range kinds {
		l, err := list(gvk)
		switch {
		case restmappings.NotServed(err):
			continue // the kind is gone from the API server: so are its objects
		case err != nil:
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		items, err := listItems(l, gvk)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	sortObjects(out)
	return out, nil
}

// sortObjects sorts objects by kind and name.
func sortObjects(objects []*unstructured.Unstructured) {
	sort.SliceStable(objects, func(i, j int) bool {
		if objects[i].GetKind() != objects[j].GetKind() {
			return objects[i].GetKind() < objects[j].GetKind()
		}
		return objects[i].GetName() < objects[j].GetName()
	})
}

// unseenBy is the keys of the objects of fresh that cached lacks.
func unseenBy(cached, fresh []*unstructured.Unstructured) map[string]bool {
	seen := keysOf(cached)
	out := map[string]bool{}
	for _, o := range fresh {
		if !seen[objectKey(o)] {
			out[objectKey(o)] = true
		}
	}
	return out
}

// withUnseen is cached with the objects of fresh that unseen names (unseenBy:
// those cached lacks), sorted by kind and name.
func withUnseen(cached, fresh []*unstructured.Unstructured, unseen map[string]bool) []*unstructured.Unstructured {
	out := slices.Clone(cached)
	for _, o := range fresh {
		if unseen[objectKey(o)] {
			out = append(out, o)
		}
	}
	sortObjects(out)
	return out
}

// objectKey identifies an object of a Bundle across versions of its kind.
func objectKey(obj client.Object) string {
	return bundlespec.ObjectKey(obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetName())
}

// orphans lists the objects b controls, of kinds, that declared (the objects the
// plan declares or its plugins generated) does not hold.
func (r *Reconciler) orphans(ctx context.Context, b *limbov1alpha1.Bundle, kinds []schema.GroupVersionKind, declared map[string]string) ([]*unstructured.Unstructured, error) {
	all, err := r.labelled(ctx, b, kinds)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range controlledBy(b, all) {
		if _, ok := declared[objectKey(o)]; !ok {
			out = append(out, o)
		}
	}
	return out, nil
}
