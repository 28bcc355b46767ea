package bundle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
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
