package bundle

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// slowGenerator is a generator whose first plan makes the ConfigMap gen, and
// whose later plans run until release is closed.
type slowGenerator struct {
	calls   *atomic.Int32
	release chan struct{}
}

func (slowGenerator) Describe() plugin.Description { return plugin.Description{Name: "slow-generator"} }

func (g slowGenerator) Plan(ctx context.Context, _ plugin.Request) (*plugin.Result, error) {
	if g.calls.Add(1) > 1 {
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	gen := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "gen"}, "data": map[string]any{"k": "v"}}}
	return &plugin.Result{Ready: true, Objects: []*unstructured.Unstructured{gen}}, nil
}

// While the plan of a generator's changed spec still runs, what its last plan
// (of the old spec) generated stays declared: it is not listed as leaving the
// Bundle, and the generator is not Ready.
func TestPassStalePlanKeepsItsObjectsDeclared(t *testing.T) {
	slow := slowGenerator{calls: &atomic.Int32{}, release: make(chan struct{})}
	defer close(slow.release)
	registry, err := plugin.NewRegistry(slow)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(v string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(`{"v":"` + v + `"}`)} }
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "slow-generator", Spec: spec("1")}})
	f := newTeardownFixture(t, b, registry)
	f.r.plans.wait = 10 * time.Millisecond // a pass waits for a plan that long, not plugin.CallWait
	ctx := context.Background()
	key := client.ObjectKeyFromObject(b)
	f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
	if f.liveConfigMap(t, "gen") == nil {
		t.Fatal("gen was not created")
	}
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(ctx, key, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources[0].Plugin.Spec = spec("2")
	if err := f.c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, _ = f.r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		if state, _ := f.resourceState(t, "sweep"); state != limbov1alpha1.ResourceInProgress {
			t.Errorf("sweep: %s while the plan of its changed spec runs, want InProgress", state)
		}
		if pending := f.status(t).PendingDeletions; len(pending) != 0 {
			t.Errorf("pendingDeletions = %+v while the plan of the changed spec runs, want none: gen is still declared", pending)
		}
		if f.liveConfigMap(t, "gen") == nil {
			t.Fatal("gen was deleted")
		}
	}
}

// An item in limbo whose deadline came before its Bundle was made carries
// the stamp of an earlier Bundle of the name (whose teardown did not take it
// out of limbo): a pass's countdown of it starts again, it is not due at once.
func TestPassItemsOfAnEarlierBundleWaitTheirDelay(t *testing.T) {
	registry, err := plugin.NewRegistry(inventoried{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "inventoried", DeletionDelay: "1h"}})
	b.CreationTimestamp = metav1.Now()
	debris := itemInLimbo("shop", "debris", "shop/web/sweep") // stamped in 2020
	f := newTeardownFixture(t, b, registry, debris)
	f.r.plans.wait = 10 * time.Millisecond
	f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
	cm := f.liveConfigMap(t, "debris")
	if cm == nil {
		t.Fatal("debris, stamped for an earlier Bundle shop/web, was deleted at once")
	}
	if stamp, err := time.Parse(time.RFC3339, cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]); err != nil || stamp.Before(b.CreationTimestamp.Truncate(time.Second)) {
		t.Errorf("debris's stamp is %q (%v), want one from the Bundle's creation on", cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp], err)
	}
}

// switchingGenerator generates the ConfigMap moving in its first plan only
// (first), or in every plan but its first.
type switchingGenerator struct {
	name  string
	first bool // generates moving in its first plan only; else from its second on
	calls *atomic.Int32
}

func (g switchingGenerator) Describe() plugin.Description { return plugin.Description{Name: g.name} }

func (g switchingGenerator) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	out := &plugin.Result{Ready: true}
	if n := g.calls.Add(1); (n == 1) == g.first {
		out.Objects = []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "moving"}, "data": map[string]any{"k": "v"}}}}
	}
	return out, nil
}

// brokenPlan is a plugin whose plans fail: its resource is an idle generator.
type brokenPlan struct{}

func (brokenPlan) Describe() plugin.Description { return plugin.Description{Name: "broken"} }

func (brokenPlan) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return nil, errors.New("the backend is down")
}

// An object a generator dropped in this pass's plan is free for another to
// take in the same pass, even while some other generator is idle: only an
// idle generator (one that did not plan) keeps what it generated before.
func TestPassObjectDroppedByAGeneratorThatPlannedIsFree(t *testing.T) {
	from := switchingGenerator{name: "from", first: true, calls: &atomic.Int32{}}
	to := switchingGenerator{name: "to", calls: &atomic.Int32{}}
	registry, err := plugin.NewRegistry(brokenPlan{}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(
		limbov1alpha1.Resource{Name: "idle", Plugin: &limbov1alpha1.PluginResource{Name: "broken"}},
		limbov1alpha1.Resource{Name: "a", Plugin: &limbov1alpha1.PluginResource{Name: "from"}},
		limbov1alpha1.Resource{Name: "b", Plugin: &limbov1alpha1.PluginResource{Name: "to"}},
	)
	f := newTeardownFixture(t, b, registry)
	f.r.plans.wait = 10 * time.Millisecond
	// a's first plan makes it.
	f.reconcileUntil(t, "moving not generated", func() bool { return f.liveConfigMap(t, "moving") != nil })
	f.reconcileUntil(t, "moving not b's", func() bool {
		if state, reason := f.resourceState(t, "b"); reason == limbov1alpha1.ReasonDuplicateObject {
			t.Fatalf("b: %s %s; want it to take moving, which a dropped in its plan", state, reason)
		}
		cm := f.liveConfigMap(t, "moving")
		return cm != nil && cm.Annotations[limbov1alpha1.AnnotationGeneratedBy] == "b"
	})
}

// scriptedPlugin plans as plan says for its nth plan (from 1).
type scriptedPlugin struct {
	name  string
	plan  func(n int32) (*plugin.Result, error)
	calls *atomic.Int32
}

func scripted(name string, plan func(n int32) (*plugin.Result, error)) scriptedPlugin {
	return scriptedPlugin{name: name, plan: plan, calls: &atomic.Int32{}}
}

func (p scriptedPlugin) Describe() plugin.Description { return plugin.Description{Name: p.name} }

func (p scriptedPlugin) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return p.plan(p.calls.Add(1))
}

// generating is a plan's result that generates the ConfigMap name.
func generating(ready bool, name string) *plugin.Result {
	return &plugin.Result{Ready: ready, Objects: []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": map[string]any{"k": "v"}}}}}
}

var errBackendDown = errors.New("the backend is down")

// What a generator generated stays its own while it does not plan (Blocked on
// a dependency, its plan failing): it is no orphan, so pendingDeletions does
// not list it as held back until the Bundle is Ready — it would be deleted
// then only if the generator's next plan drops it. What the generator dropped
// before, in limbo already, stays listed.
func TestPassIdleGeneratorsObjectsAreNotPending(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plugins []plugin.Plugin
		spec    []limbov1alpha1.Resource
		// state: the idle generator's, once idle; pending: the names listed then.
		idle, kept string
		state      limbov1alpha1.ResourceState
		pending    []string
	}{{
		name: "its plan fails",
		plugins: []plugin.Plugin{scripted("gen", func(n int32) (*plugin.Result, error) {
			if n == 1 {
				return generating(true, "kept"), nil
			}
			return nil, errBackendDown
		})},
		spec:  []limbov1alpha1.Resource{{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "gen"}}},
		idle:  "gen",
		kept:  "kept",
		state: limbov1alpha1.ResourceError,
	}, {
		name: "it is Blocked on a dependency no longer Ready",
		plugins: []plugin.Plugin{
			scripted("dep", func(n int32) (*plugin.Result, error) { return generating(n == 1, "dep"), nil }),
			scripted("gen", func(int32) (*plugin.Result, error) { return generating(true, "kept"), nil }),
		},
		spec: []limbov1alpha1.Resource{
			{Name: "dep", Plugin: &limbov1alpha1.PluginResource{Name: "dep"}},
			{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "gen"}, References: []limbov1alpha1.Reference{{Resource: "dep"}}},
		},
		idle:  "gen",
		kept:  "kept",
		state: limbov1alpha1.ResourceBlocked,
	}, {
		name: "it dropped the object before its plan failed",
		plugins: []plugin.Plugin{scripted("gen", func(n int32) (*plugin.Result, error) {
			switch {
			case n == 1:
				return generating(true, "dropped"), nil
			case n < 4:
				return &plugin.Result{Ready: true}, nil
			}
			return nil, errBackendDown
		})},
		spec:    []limbov1alpha1.Resource{{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "gen", DeletionDelay: "1h"}}},
		idle:    "gen",
		kept:    "dropped",
		state:   limbov1alpha1.ResourceError,
		pending: []string{"dropped"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			registry, err := plugin.NewRegistry(tc.plugins...)
			if err != nil {
				t.Fatal(err)
			}
			b := livingBundle(tc.spec...)
			f := newTeardownFixture(t, b, registry)
			f.r.plans.wait = 10 * time.Millisecond
			f.reconcileUntil(t, tc.kept+" not generated", func() bool { return f.liveConfigMap(t, tc.kept) != nil })
			f.reconcileUntil(t, tc.idle+" not "+string(tc.state), func() bool {
				state, _ := f.resourceState(t, tc.idle)
				return state == tc.state
			})
			for range 2 {
				_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}) // the failing plan's error
				st := f.status(t)
				var pending []string
				for _, pd := range st.PendingDeletions {
					pending = append(pending, pd.Name)
				}
				if !reflect.DeepEqual(pending, tc.pending) {
					t.Errorf("pendingDeletions = %+v while %s is %s, want %v", st.PendingDeletions, tc.idle, tc.state, tc.pending)
				}
				if want := []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}; !reflect.DeepEqual(st.ManagedKinds, want) {
					t.Errorf("managedKinds = %+v, want %+v: %s is still the Bundle's", st.ManagedKinds, want, tc.kept)
				}
				if f.liveConfigMap(t, tc.kept) == nil {
					t.Fatalf("%s was deleted", tc.kept)
				}
			}
		})
	}
}

// twoFaced lists the ConfigMap debris twice: as an orphan, then as desired (a
// volume seen on a live node and on a removed one).
type twoFaced struct{}

func (twoFaced) Describe() plugin.Description { return plugin.Description{Name: "two-faced"} }

func (twoFaced) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	debris := &unstructured.Unstructured{}
	debris.SetGroupVersionKind(configMapGVK)
	if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: req.Bundle.Namespace, Name: "debris"}, debris); err != nil {
		return nil, err
	}
	return &plugin.Result{Ready: true, Inventory: &plugin.Inventory{
		Objects:       []plugin.ObjectItem{{Object: debris}, {Object: debris.DeepCopy(), Desired: true}},
		DesiredListed: 1,
	}}, nil
}

// An object item a plan lists both as an orphan and as desired is desired:
// without a delay, it was deleted at once (with one, stamped and cancelled
// at every pass).
func TestPassItemListedBothWaysIsDesired(t *testing.T) {
	registry, err := plugin.NewRegistry(twoFaced{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "two-faced"}})
	f := newTeardownFixture(t, b, registry, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "debris"}})
	f.r.plans.wait = 10 * time.Millisecond
	f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
	f.reconcile(t)
	if f.liveConfigMap(t, "debris") == nil {
		t.Fatal("debris, listed as desired too, was deleted")
	}
}

// sweepsTheirs lists the ConfigMap theirs, another Bundle's, as an orphan.
type sweepsTheirs struct{}

func (sweepsTheirs) Describe() plugin.Description { return plugin.Description{Name: "sweeps-theirs"} }

func (sweepsTheirs) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	theirs := &unstructured.Unstructured{}
	theirs.SetGroupVersionKind(configMapGVK)
	if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: req.Bundle.Namespace, Name: "theirs"}, theirs); err != nil {
		return nil, err
	}
	return &plugin.Result{Ready: true, Inventory: &plugin.Inventory{Objects: []plugin.ObjectItem{{Object: theirs}}, DesiredListed: 1}}, nil
}

// A plan's item that another Bundle manages is left to that Bundle: not
// stamped with the resource's delay, not deleted.
func TestPassLeavesAnotherBundlesObjectToIt(t *testing.T) {
	registry, err := plugin.NewRegistry(sweepsTheirs{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeps-theirs"}})
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "theirs", Labels: map[string]string{limbov1alpha1.LabelBundle: "other"}}}
	f := newTeardownFixture(t, b, registry, theirs)
	f.r.plans.wait = 10 * time.Millisecond
	f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
	f.reconcile(t)
	cm := f.liveConfigMap(t, "theirs")
	if cm == nil {
		t.Fatal("another Bundle's ConfigMap was deleted")
	}
	if _, stamped := cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
		t.Errorf("another Bundle's ConfigMap was stamped: %v", cm.Annotations)
	}
}
