package bundle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A resource whose references would substitute more than
// reference.MaxSubstitutedBytes into its object (a ConfigMap's 1 MiB value used
// by three markers) is an Error of its own, SubstitutionTooLarge, reported in
// its status, the Stalled condition and a Warning event; the object is not
// written, and the pass goes on (the ConfigMap it reads from is applied).
func TestSubstitutionTooLargeIsResourceError(t *testing.T) {
	object := func(v any) *runtime.RawExtension {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return &runtime.RawExtension{Raw: raw}
	}
	data := map[string]any{}
	for _, k := range []string{"a", "b", "c"} {
		data[k] = "!{v}"
	}
	resources := []limbov1alpha1.Resource{
		{Name: "src", Object: object(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "src"},
			"data": map[string]any{"v": strings.Repeat("x", 1<<20)}})},
		{Name: "amp", Object: object(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "amp"}, "data": data}),
			References: []limbov1alpha1.Reference{{Name: "v", Resource: "src", Path: "data.v"}}},
	}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{})
	b.DeletionTimestamp, b.Finalizers = nil, []string{limbov1alpha1.FinalizerTeardown}
	f := newTeardownFixture(t, b, nil)
	events := make(chan string, 16)
	f.r.Recorder = &record.FakeRecorder{Events: events}
	ctx := context.Background()
	if _, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}

	const want = `data.c: !{v} (1048578 bytes, after 2097156 bytes of values substituted before it): the values substituted into one object are limited to 3 MiB (3145728 bytes)`
	st := f.status(t)
	states := map[string]limbov1alpha1.ResourceStatus{}
	for _, r := range st.Resources {
		states[r.Name] = r
	}
	if r := states["src"]; r.State != limbov1alpha1.ResourceReady {
		t.Errorf("src: %s %s %q, want Ready", r.State, r.Reason, r.Message)
	}
	if r := states["amp"]; r.State != limbov1alpha1.ResourceError || r.Reason != limbov1alpha1.ReasonSubstitutionTooLarge || r.Message != want {
		t.Errorf("amp: %s %s %q, want Error %s %q", r.State, r.Reason, r.Message, limbov1alpha1.ReasonSubstitutionTooLarge, want)
	}
	if c := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, `resource "amp": `+want) {
		t.Errorf("Stalled = %+v, want True naming amp's error", c)
	}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: "amp"}, &corev1.ConfigMap{}); err == nil {
		t.Error("ConfigMap amp was written")
	}
	close(events)
	found := false
	for e := range events {
		found = found || e == "Warning "+limbov1alpha1.ReasonSubstitutionTooLarge+` resource "amp": `+want
	}
	if !found {
		t.Errorf("no Warning %s event for amp", limbov1alpha1.ReasonSubstitutionTooLarge)
	}
}

// A named reference to a plugin resource that generates no object (a cleanup
// job, like namespace-gc) says so once the plugin resource is Ready,
// instead of "value not available yet" for ever.
func TestReferenceToAPluginThatGeneratesNothing(t *testing.T) {
	registry, err := plugin.NewRegistry(idleCleanup{})
	if err != nil {
		t.Fatal(err)
	}
	resources := []limbov1alpha1.Resource{
		{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "idle"}},
		{Name: "cfg", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"!{x}"}}`)},
			References: []limbov1alpha1.Reference{{Name: "x", Resource: "sweep", Path: "metadata.name"}}},
	}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{})
	b.DeletionTimestamp, b.Finalizers = nil, []string{limbov1alpha1.FinalizerTeardown}
	f := newTeardownFixture(t, b, registry)
	const want = `reference "x": plugin resource "sweep" generated no object to read a value from (plugin "idle"); only a plugin that generates objects can be read, or reference it without a name and path, for order alone`
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The plugin plans in the background: the first passes find it Planning.
		_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
		var cfg limbov1alpha1.ResourceStatus
		for _, r := range f.status(t).Resources {
			if r.Name == "cfg" {
				cfg = r
			}
		}
		if cfg.State == limbov1alpha1.ResourceError {
			if cfg.Reason != limbov1alpha1.ReasonReferenceError || cfg.Message != want {
				t.Errorf("cfg: %s %s %q, want ReferenceError %q", cfg.State, cfg.Reason, cfg.Message, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cfg: %s %s %q after 10s, want Error", cfg.State, cfg.Reason, cfg.Message)
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
}

// idleCleanup is a cleanup job with nothing to clean: Ready, no objects, no items.
type idleCleanup struct{}

func (idleCleanup) Describe() plugin.Description { return plugin.Description{Name: "idle"} }

func (idleCleanup) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: true}, nil
}

// A template whose `labels:` has nothing under it (null) is applied and Ready:
// a null map is absent, in a template as after references are resolved.
func TestNullLabelsTemplateIsApplied(t *testing.T) {
	resources := []limbov1alpha1.Resource{{Name: "web", Object: &runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","labels":null,"annotations":null},"data":{"a":"b"}}`)}}}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{})
	b.DeletionTimestamp, b.Finalizers = nil, []string{limbov1alpha1.FinalizerTeardown}
	f := newTeardownFixture(t, b, nil)
	ctx := context.Background()
	if _, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	for _, r := range f.status(t).Resources {
		if r.State != limbov1alpha1.ResourceReady {
			t.Errorf("resource %s: %s %s %q, want Ready", r.Name, r.State, r.Reason, r.Message)
		}
	}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: "web"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap web not created: %v", err)
	}
}
