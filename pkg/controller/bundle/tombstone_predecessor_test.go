package bundle

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// externalOnly is a plugin whose plan is Ready with one external item, Thing
// 1, an orphan.
type externalOnly struct{}

func (externalOnly) Describe() plugin.Description { return plugin.Description{Name: "external-only"} }

func (externalOnly) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: true, Inventory: &plugin.Inventory{
		External:      []plugin.ExternalItem{{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}}},
		DesiredListed: 1,
	}}, nil
}

// A Tombstone an earlier Bundle of the same name left (its owner reference
// removed by --cascade=orphan, its teardown gone without it) was listed by the
// new Bundle's passes as the new Bundle's own pending deletion, and nothing
// ever acted on it: the Tombstone controller took it for a replaced Bundle's,
// and the pass never cancelled nor made it anew. The pass now removes it (a
// cancel: the item is not deleted by it) and makes its own, whose countdown
// the Tombstone controller runs.
func TestPassReplacesAnEarlierBundlesTombstone(t *testing.T) {
	registry, err := plugin.NewRegistry(externalOnly{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "external-only"}})
	item := limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}
	earlier := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: softdelete.TombstoneName("web", "sweep", item), UID: "earlier-ts",
		Labels:      map[string]string{limbov1alpha1.LabelBundle: "web", limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "2020-01-01T00:00:00Z"},
		Finalizers:  []string{limbov1alpha1.FinalizerHardDelete},
	}, Spec: limbov1alpha1.TombstoneSpec{Plugin: "external-only", Resource: "sweep", Item: item}}
	f := newTeardownFixture(t, b, registry, earlier)
	f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
	var ts limbov1alpha1.Tombstone
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(earlier), &ts); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&ts, b) || ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "2020-01-01T00:00:00Z" {
		t.Errorf("Tombstone %s: owners %v, annotations %v; want the Bundle's own, its countdown from now", ts.Name, ts.OwnerReferences, ts.Annotations)
	}
}

// A teardown cancels the Bundle's Tombstones as the API server lists them: one
// its cache does not show (another shard's label, or made by a pass a moment
// before) outlived the Bundle, to be listed by a Bundle of the same name that
// did not control it.
func TestTeardownCancelsTombstonesItsCacheDoesNotShow(t *testing.T) {
	for _, foreground := range []bool{false, true} {
		t.Run(fmt.Sprintf("foreground %v", foreground), func(t *testing.T) { teardownCancelsTombstonesItsCacheDoesNotShow(t, foreground) })
	}
}

func teardownCancelsTombstonesItsCacheDoesNotShow(t *testing.T, foreground bool) {
	item := limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}
	b := deletedBundle(nil, limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	if foreground { // its one pass lets it go, as letGo's last does
		b.Finalizers = append(b.Finalizers, metav1.FinalizerDeleteDependents)
	}
	yes := true
	ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: softdelete.TombstoneName("web", "sweep", item), UID: "ts-uid",
		Labels:          map[string]string{limbov1alpha1.LabelBundle: "web", limbov1alpha1.LabelPendingDeletion: "true", "limbo.dev/shard": "b"},
		Finalizers:      []string{limbov1alpha1.FinalizerHardDelete},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: b.UID, Controller: &yes}},
	}, Spec: limbov1alpha1.TombstoneSpec{Plugin: "external-only", Resource: "sweep", Item: item}}
	f := newTeardownFixture(t, b, nil, ts)
	// The cache shows no Tombstone; the API server does.
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, tombstones := list.(*limbov1alpha1.TombstoneList); tombstones {
			return nil
		}
		return c.List(ctx, list, opts...)
	}})
	f.reconcile(t)
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(ts), &limbov1alpha1.Tombstone{}); !apierrors.IsNotFound(err) {
		t.Errorf("Tombstone %s after the teardown: %v, want it cancelled (gone)", ts.Name, err)
	}
}

// A teardown pass that waits (a wave held by another controller's finalizer)
// lists the Bundle's Tombstones from its cache, not the API server: 200
// Bundles torn down at once, each pass every 2 s, cost 100 requests a second
// of the budget every tenant shares. Only the last pass, before the Bundle
// goes, asks the API server.
func TestWaitingTeardownListsNoTombstonesFromTheAPIServer(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "held")}, limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	f := newTeardownFixture(t, b, nil, bundleConfigMap("held", nil, "example.com/backup"))
	lists := 0
	f.r.APIReader = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, tombstones := list.(*limbov1alpha1.TombstoneList); tombstones {
			lists++
		}
		return c.List(ctx, list, opts...)
	}})
	for range 3 {
		f.reconcile(t)
	}
	if lists != 0 {
		t.Errorf("%d Tombstone listings from the API server by passes that wait, want none", lists)
	}
}

// A Tombstone cancelled already and held by another controller's finalizer is
// not announced cancelled again at each teardown pass.
func TestTeardownAnnouncesACancelledTombstoneOnce(t *testing.T) {
	item := limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "held")}, limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	now := metav1.Now()
	ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: softdelete.TombstoneName("web", "sweep", item), UID: "ts-uid", DeletionTimestamp: &now,
		Labels: map[string]string{limbov1alpha1.LabelBundle: "web"}, Finalizers: []string{"example.com/backup"},
	}, Spec: limbov1alpha1.TombstoneSpec{Plugin: "external-only", Resource: "sweep", Item: item}}
	f := newTeardownFixture(t, b, nil, ts, bundleConfigMap("held", nil, "example.com/backup"))
	for range 3 {
		for _, e := range f.eventsOfAPass(t) {
			if strings.Contains(e, "DeletionCancelled") {
				t.Errorf("event %q for a Tombstone cancelled already", e)
			}
		}
	}
}
