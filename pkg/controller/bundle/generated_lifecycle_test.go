package bundle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/configmap"
)

// A generated object in limbo that its generator, in the spec at the
// deletion, may make again (put back into its spec; no pass has planned it
// since) is taken out of limbo and released with a countdown from the
// deletion, as a template's object declared again is. Released with its old
// stamp, long due, the reaper deleted it at once.
func TestTeardownOfAGeneratedObjectItsGeneratorMayMakeAgain(t *testing.T) {
	old := "2020-01-01T00:00:00Z"
	x, gen, registry := generatedInLimbo(t, old, "x")
	f := newTeardownFixture(t, deletedBundle([]limbov1alpha1.Resource{gen}, limbov1alpha1.BundleStatus{}), registry, x)
	live := f.tearDownUntilReleased(t, "x")
	if live == nil {
		t.Fatal("x is gone: deleted at once")
	}
	if stamp := live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; stamp == old {
		t.Errorf("x released with its old stamp %s: due at once, though the generator in the spec may make it", old)
	}
}

// slowAfterPlugin is a scripted plugin whose plans from the nth on wait until
// gate closes (or their context ends): a plan that is slow.
type slowAfterPlugin struct {
	scriptedPlugin
	gate      chan struct{}
	blockFrom int32
}

func (p slowAfterPlugin) Plan(ctx context.Context, _ plugin.Request) (*plugin.Result, error) {
	n := p.calls.Add(1)
	if n >= p.blockFrom {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.plan(n)
}

// A generator whose last plan failed, whose spec then changed and whose new
// plan is slow has no plan that says what it makes: it is idle, and what it
// generated stays its own — not listed as leaving, held back until the
// Bundle is Ready (and so handed over to an adopter at its deadline).
func TestPassStaleGeneratorWithoutAPlanIsIdle(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	p := slowAfterPlugin{scriptedPlugin: scripted("gen", func(n int32) (*plugin.Result, error) {
		if n == 1 {
			return generating(true, "kept"), nil
		}
		return nil, errBackendDown
	}), gate: gate, blockFrom: 3}
	registry, err := plugin.NewRegistry(p)
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "gen", Spec: &apiextensionsv1.JSON{Raw: []byte(`{"v":1}`)}}})
	f := newTeardownFixture(t, b, registry)
	f.r.plans.wait = 10 * time.Millisecond
	f.reconcileUntil(t, "kept not generated", func() bool { return f.liveConfigMap(t, "kept") != nil })
	f.reconcileUntil(t, "gen's plan not failed", func() bool { s, _ := f.resourceState(t, "gen"); return s == limbov1alpha1.ResourceError })
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources[0].Plugin.Spec = &apiextensionsv1.JSON{Raw: []byte(`{"v":2}`)}
	cur.Generation++
	if err := f.c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	f.reconcileUntil(t, "gen not planning its changed spec", func() bool {
		_, reason := f.resourceState(t, "gen")
		return reason == limbov1alpha1.ReasonPlanning
	})
	for _, pd := range f.status(t).PendingDeletions {
		if pd.Name == "kept" {
			t.Errorf("kept, the generator's own, listed as leaving: %q", pd.Message)
		}
	}
}

// A generated orphan names the generator that made it in its pendingDeletions
// entry (and its audit line), not only the first object of each generator,
// which is all a generator's status entry records.
func TestPassGeneratedOrphanNamesItsGenerator(t *testing.T) {
	plan := func(names ...string) *plugin.Result {
		r := &plugin.Result{Ready: true}
		for _, n := range names {
			r.Objects = append(r.Objects, generating(true, n).Objects...)
		}
		return r
	}
	registry, err := plugin.NewRegistry(scripted("gen", func(n int32) (*plugin.Result, error) {
		if n <= 2 {
			return plan("a", "b"), nil
		}
		return plan("a"), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	f := newTeardownFixture(t, livingBundle(limbov1alpha1.Resource{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "gen", DeletionDelay: "1h"}}), registry)
	f.r.plans.wait = time.Second
	f.reconcileUntil(t, "b not pending", func() bool { return len(f.status(t).PendingDeletions) > 0 })
	for _, pd := range f.status(t).PendingDeletions {
		if pd.Name == "b" && pd.Resource != "gen" {
			t.Errorf("b's entry names resource %q, want gen", pd.Resource)
		}
	}
}

// A generated object in limbo whose generator was Ready in the last pass of
// the spec (it no longer makes it) keeps its countdown at the teardown: the
// generation the API server bumped when it marked the Bundle for deletion is
// no new spec. Taken for one, every such object was cancelled ("desired
// again") and counted down anew from the deletion.
func TestTeardownKeepsTheCountdownOfWhatAReadyGeneratorDropped(t *testing.T) {
	stamp := time.Now().UTC().Add(-time.Hour).Truncate(time.Second).Format(time.RFC3339)
	x, gen, registry := generatedInLimbo(t, stamp, "y")
	b := deletedBundle([]limbov1alpha1.Resource{gen}, limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "gen", State: limbov1alpha1.ResourceReady}}})
	b.Generation = 2 // bumped by the deletion
	f := newTeardownFixture(t, b, registry, x)
	if live := f.tearDownUntilReleased(t, "x"); live == nil || live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != stamp {
		t.Errorf("x after the teardown: %v; want it released with its stamp %s kept", live, stamp)
	}
}

// generatedInLimbo is ConfigMap x, made by the configmap generator gen (delay
// 1h) and in limbo since stamp, and gen, which now makes the ConfigMap makes.
func generatedInLimbo(t *testing.T, stamp, makes string) (*corev1.ConfigMap, limbov1alpha1.Resource, *plugin.Registry) {
	t.Helper()
	x := bundleConfigMap("x", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: stamp,
		limbov1alpha1.AnnotationGeneratedBy: "gen"})
	x.Labels[limbov1alpha1.LabelPendingDeletion] = "true"
	registry, err := plugin.NewRegistry(configmap.New())
	if err != nil {
		t.Fatal(err)
	}
	gen := limbov1alpha1.Resource{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "configmap", DeletionDelay: "1h",
		Spec: &apiextensionsv1.JSON{Raw: []byte(`{"name":"` + makes + `","data":{"k":"v"}}`)}}}
	return x, gen, registry
}

// tearDownUntilReleased runs teardown passes until ConfigMap name is no longer
// controlled by the Bundle (released, or gone), and returns it (nil: gone).
func (f *teardownFixture) tearDownUntilReleased(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	f.reconcileUntil(t, name+" still controlled", func() bool {
		live := f.liveConfigMap(t, name)
		return live == nil || metav1.GetControllerOf(live) == nil
	})
	return f.liveConfigMap(t, name)
}
