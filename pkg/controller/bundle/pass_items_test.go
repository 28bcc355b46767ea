package bundle

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// The plugin items in limbo that no plan judged in a pass: those of a resource
// that is no plugin resource any more are cancelled; those of a plugin
// resource whose plan had nothing to say keep their countdown and their line,
// and an object that names the Bundle but that its status does not vouch for
// (another tenant's) is never listed, and only cancelled (cancelling never
// deletes) when its resource left.
func TestPassUnjudgedItems(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource func(t *testing.T) limbov1alpha1.Resource
		// inLimbo: mine stays in limbo (else it is cancelled).
		inLimbo bool
		listed  []string
	}{{
		name: "the resource is still a plugin resource, its plan silent: mine keeps its countdown",
		resource: func(*testing.T) limbov1alpha1.Resource {
			return limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}}
		},
		inLimbo: true,
		listed:  []string{"mine"},
	}, {
		name:     "a resource of that name that is no plugin resource: mine is cancelled",
		resource: func(t *testing.T) limbov1alpha1.Resource { return cmResource(t, "sweep", nil) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			registry, err := plugin.NewRegistry(neverReady{})
			if err != nil {
				t.Fatal(err)
			}
			status := limbov1alpha1.BundleStatus{ObservedGeneration: 1}
			setPending(&status, []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "mine", Resource: "sweep"}})
			b := livingBundle(tc.resource(t))
			b.Status = status
			f := newTeardownFixture(t, b, registry, itemInLimbo("shop", "mine", "shop/web/sweep"), itemInLimbo("team-b", "bait", "shop/web/sweep"))
			_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			if got := f.inLimbo(t, "shop", "mine"); got != tc.inLimbo {
				t.Errorf("mine in limbo: %v, want %v", got, tc.inLimbo)
			}
			if got := f.inLimbo(t, "team-b", "bait"); got != tc.inLimbo {
				t.Errorf("bait, which the status does not vouch for, in limbo: %v, want %v", got, tc.inLimbo)
			}
			var listed []string
			for _, pd := range f.status(t).PendingDeletions {
				listed = append(listed, pd.Name)
			}
			if len(listed) != len(tc.listed) || (len(listed) > 0 && listed[0] != tc.listed[0]) {
				t.Errorf("pendingDeletions name %v, want %v", listed, tc.listed)
			}
		})
	}
}

// A teardown cancels the Bundle's plugin items in limbo, never another
// Bundle's, and leaves those of a plugin resource with a teardown to it.
func TestTeardownCancelsOnlyItsOwnItems(t *testing.T) {
	registry, err := plugin.NewRegistry(sweeper{done: &atomic.Bool{}})
	if err != nil {
		t.Fatal(err)
	}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1}
	setPending(&status, []limbov1alpha1.PendingDeletion{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "mine", Resource: "left"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "swept", Resource: "sweep"},
	})
	b := deletedBundle([]limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeper"}}}, status)
	f := newTeardownFixture(t, b, registry,
		itemInLimbo("shop", "mine", "shop/web/left"), itemInLimbo("shop", "swept", "shop/web/sweep"), itemInLimbo("shop", "theirs", "shop/other/left"))
	_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	if f.inLimbo(t, "shop", "mine") {
		t.Error("mine, the Bundle's item, is still in limbo")
	}
	if !f.inLimbo(t, "shop", "swept") {
		t.Error("swept, its teardown's, was cancelled")
	}
	if !f.inLimbo(t, "shop", "theirs") {
		t.Error("theirs, Bundle other's item, was cancelled")
	}
}

// A Tombstone made by a plugin resource is cancelled once the spec's resource
// of that name runs another plugin: the plugin that made it is no longer
// asked to delete anything for the Bundle.
func TestPassCancelsTombstonesOfAnotherPlugin(t *testing.T) {
	registry, err := plugin.NewRegistry(neverReady{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}})
	yes := true
	ts := &limbov1alpha1.Tombstone{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-sweep-thing-1", Labels: map[string]string{limbov1alpha1.LabelBundle: "web"},
			Finalizers:      []string{limbov1alpha1.FinalizerHardDelete},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}}},
		Spec: limbov1alpha1.TombstoneSpec{Plugin: "old-plugin", Resource: "sweep", Item: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}},
	}
	f := newTeardownFixture(t, b, registry, ts)
	_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(ts), &limbov1alpha1.Tombstone{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Tombstone of plugin old-plugin is still there (%v), want it cancelled", err)
	}
}
