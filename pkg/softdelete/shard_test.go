package softdelete_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A Tombstone is in its Bundle's shard: the Bundle's shard label is copied onto it.
func TestTombstoneInBundlesShard(t *testing.T) {
	sel, err := shard.Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.engine.Shard = sel
	b := bundle()
	b.Labels = map[string]string{"limbo.dev/shard": "a", "team": "x"}
	item := limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team"}
	if _, err := h.engine.OrphanExternal(context.Background(), b, "namespace-gc", "storage-ns-gc", "10m", item); err != nil {
		t.Fatal(err)
	}
	var ts limbov1alpha1.Tombstone
	if err := h.client.Get(context.Background(), client.ObjectKey{Namespace: b.Namespace, Name: softdelete.TombstoneName(b.Name, "storage-ns-gc", item)}, &ts); err != nil {
		t.Fatal(err)
	}
	if ts.Labels["limbo.dev/shard"] != "a" || ts.Labels["team"] != "" || !sel.Matches(ts.Labels) {
		t.Errorf("Tombstone labels %v: want the Bundle's shard label only", ts.Labels)
	}
}

// A Tombstone made before its Bundle moved to this shard keeps the old shard's
// labels, and this shard's cache does not show it: the pass that finds its item
// an orphan again reads it from the API server, and moves it into the Bundle's
// shard. Another Bundle's Tombstone of the name is left as it is.
func TestTombstoneMovedIntoItsBundlesShard(t *testing.T) {
	sel, err := shard.Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}
	b := bundle()
	item := limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team"}
	h := newHarness(t)
	if _, err := h.engine.OrphanExternal(context.Background(), b, "namespace-gc", "storage-ns-gc", "10m", item); err != nil { // the rest's shard
		t.Fatal(err)
	}
	h.engine.Shard = sel
	name := softdelete.TombstoneName(b.Name, "storage-ns-gc", item)

	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	h.calls = nil
	ts, err := h.engine.OrphanExternal(context.Background(), b, "namespace-gc", "storage-ns-gc", "10m", item)
	if err != nil {
		t.Fatal(err)
	}
	// The move is guarded by the resourceVersion read, as the old shard's writes are.
	if want := []string{"CREATE Tombstone team-a/" + name,
		`PATCH Tombstone team-a/` + name + ` application/merge-patch+json {"metadata":{"labels":{"limbo.dev/shard":"a"},"resourceVersion":"1"}}`}; !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	var stored limbov1alpha1.Tombstone
	if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(ts), &stored); err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(stored.Labels) || stored.Labels[limbov1alpha1.LabelBundle] != b.Name || !sel.Matches(ts.Labels) {
		t.Errorf("Tombstone labels %v (returned %v): want it moved into shard a, its Bundle label kept", stored.Labels, ts.Labels)
	}

	// A Bundle of the name that does not control it (another UID: b deleted
	// with --cascade=orphan and made anew, its teardown gone without it) does
	// not take it into its shard: it removes it (a cancel; the item is never
	// deleted by it) and makes its own. Left, it was listed as the new
	// Bundle's, and nothing ever acted on it: the Tombstone controller took it
	// for a replaced Bundle's.
	successor := bundle()
	successor.UID = "uid-successor"
	successor.Labels = map[string]string{"limbo.dev/shard": "b"}
	h.calls = nil
	mine, err := h.engine.OrphanExternal(context.Background(), successor, "namespace-gc", "storage-ns-gc", "10m", item)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"CREATE Tombstone team-a/" + name,
		`PATCH Tombstone team-a/` + name + ` application/merge-patch+json {"metadata":{"finalizers":null,"resourceVersion":"2"}}`,
		"DELETE Tombstone team-a/" + name + " uid=" + string(stored.UID),
		"CREATE Tombstone team-a/" + name}; !reflect.DeepEqual(h.calls, want) {
		t.Errorf("the successor's OrphanExternal: API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(ts), &stored); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&stored, successor) || stored.Labels["limbo.dev/shard"] != "b" || mine.UID != stored.UID {
		t.Errorf("Tombstone %s: owners %v, labels %v; want the successor's, in its shard", name, stored.OwnerReferences, stored.Labels)
	}
	if ev := strings.Join(h.events(), "\n"); !strings.Contains(ev, "DeletionCancelled") {
		t.Errorf("events:\n%s\nwant the earlier Bundle's countdown cancelled", ev)
	}
}

// An earlier Bundle's Tombstone already cancelled but held by another
// finalizer is waited for: OrphanExternal fails (the pass retries) without
// announcing its cancel again at every retry.
func TestEarlierBundlesTombstoneStillBeingDeleted(t *testing.T) {
	item := limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team"}
	now := metav1.Now()
	earlier := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: softdelete.TombstoneName("shop", "storage-ns-gc", item),
		UID: "earlier", DeletionTimestamp: &now, Finalizers: []string{"example.com/backup"}, Labels: map[string]string{bundleKey: "shop"}},
		Spec: limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Resource: "storage-ns-gc", Item: item}}
	h := newHarness(t, earlier)
	for range 2 {
		if _, err := h.engine.OrphanExternal(context.Background(), bundle(), "namespace-gc", "storage-ns-gc", "10m", item); err == nil || !strings.Contains(err.Error(), "is being deleted") {
			t.Errorf("OrphanExternal: %v, want an error: the earlier Tombstone is being deleted", err)
		}
	}
	if ev := h.events(); len(ev) != 0 {
		t.Errorf("events %q, want none", ev)
	}
}
