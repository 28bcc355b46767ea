package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// teardownWaves: first the objects no resource declares, then the resources'
// objects in reverse dependency order (dependents before what they depend on);
// without a plan, everything in one wave.
func TestTeardownWaves(t *testing.T) {
	cm := func(name string) *unstructured.Unstructured { return testObject(configMapGVK, name) }
	for _, tc := range []struct {
		name    string
		plan    []spec // nil: no plan (an invalid spec)
		objects []*unstructured.Unstructured
		want    [][]string
	}{
		{name: "no plan: one wave",
			objects: []*unstructured.Unstructured{cm("a"), cm("b")},
			want:    [][]string{{"ConfigMap a", "ConfigMap b"}}},
		{name: "a chain, dependents first",
			plan:    []spec{{name: "db", gvk: configMapGVK}, {name: "app", gvk: configMapGVK, refs: []string{"db"}}, {name: "web", gvk: configMapGVK, refs: []string{"app"}}},
			objects: []*unstructured.Unstructured{cm("app"), cm("db"), cm("web")},
			want:    [][]string{nil, {"ConfigMap web"}, {"ConfigMap app"}, {"ConfigMap db"}}},
		{name: "undeclared objects go first, in the order given",
			plan:    []spec{{name: "db", gvk: configMapGVK}},
			objects: []*unstructured.Unstructured{cm("stray-b"), cm("db"), cm("stray-a")},
			want:    [][]string{{"ConfigMap stray-b", "ConfigMap stray-a"}, {"ConfigMap db"}}},
		{name: "independent resources share a wave",
			plan:    []spec{{name: "a", gvk: configMapGVK}, {name: "b", gvk: secretGVK}},
			objects: []*unstructured.Unstructured{cm("a"), testObject(secretGVK, "b")},
			want:    [][]string{nil, {"ConfigMap a", "Secret b"}}},
		{name: "an object already gone leaves its wave empty",
			plan:    []spec{{name: "db", gvk: configMapGVK}, {name: "app", gvk: configMapGVK, refs: []string{"db"}}},
			objects: []*unstructured.Unstructured{cm("db")},
			want:    [][]string{nil, nil, {"ConfigMap db"}}},
		{name: "a plugin resource has no object",
			plan:    []spec{{name: "db", gvk: configMapGVK}, {name: "gc", refs: []string{"db"}}},
			objects: []*unstructured.Unstructured{cm("db")},
			want:    [][]string{nil, nil, {"ConfigMap db"}}},
		{name: "a generated object goes in its plugin resource's wave, after its dependents",
			plan:    []spec{{name: "cfg"}, {name: "app", gvk: configMapGVK, refs: []string{"cfg"}}},
			objects: []*unstructured.Unstructured{cm("app"), generated(cm("cfg-data"), "cfg"), generated(cm("stray"), "gone"), cm("old")},
			want:    [][]string{{"ConfigMap stray", "ConfigMap old"}, {"ConfigMap app"}, {"ConfigMap cfg-data"}}},
		{name: "an object of another kind with a declared name is undeclared",
			plan:    []spec{{name: "db", gvk: configMapGVK}},
			objects: []*unstructured.Unstructured{testObject(secretGVK, "db"), cm("db")},
			want:    [][]string{{"Secret db"}, {"ConfigMap db"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plan *bundlespec.Plan
			if tc.plan != nil {
				plan = testPlan(t, tc.plan...)
			}
			if got := waveNames(plan, tc.objects, nil); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("waves = %q, want %q", got, tc.want)
			}
		})
	}
}

// A Bundle deleted while its spec is invalid (a kind's CRD uninstalled:
// UnknownKind) still goes in reverse dependency order: app before the db it
// references, not both at once. The partial plan's graph needs only names and
// references.
func TestTeardownWavesOfAnInvalidSpec(t *testing.T) {
	widgetGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	raw := func(gvk schema.GroupVersionKind, name string) *runtime.RawExtension {
		data, err := json.Marshal(testObject(gvk, name).Object)
		if err != nil {
			t.Fatal(err)
		}
		return &runtime.RawExtension{Raw: data}
	}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"}, Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		{Name: "db", Object: raw(deploymentGVK, "db")},
		{Name: "app", References: []limbov1alpha1.Reference{{Resource: "db"}}, Object: raw(deploymentGVK, "app")},
		{Name: "widget", Object: raw(widgetGVK, "w")},
	}}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(deploymentGVK, meta.RESTScopeNamespace) // Widget's CRD is gone
	partial, errs := bundlespec.ParsePartial(b, mapper, anyPlugin{})
	if len(errs) == 0 {
		t.Fatal("want UnknownKind")
	}
	objects := []*unstructured.Unstructured{testObject(deploymentGVK, "app"), testObject(deploymentGVK, "db")}
	want := [][]string{nil, {"Deployment app"}, {"Deployment db"}}
	if got := waveNames(partial, objects, recordedKeys(b)); !reflect.DeepEqual(got, want) {
		t.Errorf("waves = %q, want %q", got, want)
	}

	// A template whose object cannot even be named now (a typo in its
	// apiVersion: "apps/") goes in its resource's wave all the same, by the
	// object its status recorded: it went first, before what depends on it.
	typo := raw(deploymentGVK, "db")
	typo.Raw = []byte(strings.Replace(string(typo.Raw), `"apps/v1"`, `"apps/"`, 1))
	b.Spec.Resources[0].Object = typo
	b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "db", Object: &limbov1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "db"}}}
	partial, _ = bundlespec.ParsePartial(b, mapper, anyPlugin{})
	if got := waveNames(partial, objects, recordedKeys(b)); !reflect.DeepEqual(got, want) {
		t.Errorf("a template that cannot be named: waves = %q, want %q", got, want)
	}
}

// A Bundle deleted after an edit made its spec reference a resource it does not
// declare, or made a cycle, is torn down dependents first all the same: the
// references that can be ordered are. Both went in one wave, db deleted with
// what depends on it.
func TestTeardownWavesOfABrokenGraph(t *testing.T) {
	objects := []*unstructured.Unstructured{testObject(deploymentGVK, "app"), testObject(deploymentGVK, "db"), testObject(deploymentGVK, "web")}
	for _, tc := range []struct {
		name string
		refs map[string][]string
		want [][]string
	}{
		{name: "a reference to a resource not declared",
			refs: map[string][]string{"app": {"db", "cache"}, "web": {"app"}},
			want: [][]string{nil, {"Deployment web"}, {"Deployment app"}, {"Deployment db"}}},
		{name: "a cycle",
			refs: map[string][]string{"app": {"db"}, "web": {"app"}, "db": {"web"}},
			want: [][]string{nil, {"Deployment db"}, {"Deployment web"}, {"Deployment app"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"}}
			for _, name := range []string{"db", "app", "web"} {
				data, err := json.Marshal(testObject(deploymentGVK, name).Object)
				if err != nil {
					t.Fatal(err)
				}
				r := limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: data}}
				for _, ref := range tc.refs[name] {
					r.References = append(r.References, limbov1alpha1.Reference{Resource: ref})
				}
				b.Spec.Resources = append(b.Spec.Resources, r)
			}
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(deploymentGVK, meta.RESTScopeNamespace)
			partial, errs := bundlespec.ParsePartial(b, mapper, anyPlugin{})
			if len(errs) == 0 {
				t.Fatal("want a spec error")
			}
			if got := waveNames(partial, objects, recordedKeys(b)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("waves = %q, want %q", got, tc.want)
			}
		})
	}
}

// waveNames is teardownWaves's waves, each as describeObjects names its objects
// (nil for an empty one).
func waveNames(plan *bundlespec.Plan, objects []*unstructured.Unstructured, recorded map[string]string) [][]string {
	var got [][]string
	for _, wave := range teardownWaves(plan, objects, recorded) {
		var names []string
		if len(wave) > 0 {
			names = describeObjects(wave)
		}
		got = append(got, names)
	}
	return got
}

// The ContentRemaining message names an object being deleted with the finalizers
// that hold it, and only such an object: another one's finalizers hold nothing yet.
func TestDescribeObjects(t *testing.T) {
	deleting := func(o *unstructured.Unstructured, finalizers ...string) *unstructured.Unstructured {
		o.SetFinalizers(finalizers)
		if o.GetDeletionTimestamp() == nil {
			o.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
		}
		return o
	}
	withFinalizer := testObject(configMapGVK, "waiting")
	withFinalizer.SetFinalizers([]string{"example.com/cleanup"})
	got := describeObjects([]*unstructured.Unstructured{
		testObject(configMapGVK, "plain"),
		withFinalizer,
		deleting(testObject(configMapGVK, "held"), "example.com/cleanup", "foregroundDeletion"),
		deleting(testObject(secretGVK, "going")),
	})
	want := []string{"ConfigMap plain", "ConfigMap waiting", "ConfigMap held (held by finalizers: example.com/cleanup, foregroundDeletion)", "Secret going"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("describeObjects = %q, want %q", got, want)
	}
}

// A teardown counts as DeletionFailure only what needs someone's attention.
func TestIsTeardownFailure(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"gone already", fmt.Errorf("update ConfigMap ns/db: %w", apierrors.NewNotFound(gr, "db")), false},
		{"changed since the cache's copy", fmt.Errorf("update ConfigMap ns/db: %w", apierrors.NewConflict(gr, "db", errors.New("the object has been modified"))), false},
		{"refused", fmt.Errorf("update ConfigMap ns/db: %w", apierrors.NewForbidden(gr, "db", errors.New("denied by policy"))), true},
		{"unreachable", errors.New("connection refused"), true},
	} {
		if got := isTeardownFailure(tc.err); got != tc.want {
			t.Errorf("%s: isTeardownFailure(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// generated is o as made by the generator plugin resource named resource.
func generated(o *unstructured.Unstructured, resource string) *unstructured.Unstructured {
	o.SetAnnotations(map[string]string{limbov1alpha1.AnnotationGeneratedBy: resource})
	return o
}

// teardownFixture is a Reconciler over a fake API server (which is also its
// cache) holding b, being torn down, and objects; the metrics are the
// fixture's own, not the process's.
type teardownFixture struct {
	r      *Reconciler
	c      client.Client
	reg    *prometheus.Registry
	bundle *limbov1alpha1.Bundle
}

func newTeardownFixture(t testing.TB, b *limbov1alpha1.Bundle, plugins *plugin.Registry, objects ...client.Object) *teardownFixture {
	t.Helper()
	return newTeardownFixtureServing(t, []schema.GroupVersionKind{configMapGVK, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")}, b, plugins, objects...)
}

// newTeardownFixtureServing is newTeardownFixture with an API server that
// serves kinds (namespaced, all watched).
func newTeardownFixtureServing(t testing.TB, kinds []schema.GroupVersionKind, b *limbov1alpha1.Bundle, plugins *plugin.Registry, objects ...client.Object) *teardownFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{limbov1alpha1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// The versions of kinds are their groups' preferred ones, as discovery tells.
	var preferred []schema.GroupVersion
	for _, gvk := range kinds {
		preferred = append(preferred, gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(preferred)
	builder := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithStatusSubresource(&limbov1alpha1.Bundle{}).
		WithIndex(&limbov1alpha1.Bundle{}, adoptionIndex, adoptionKeys).
		WithIndex(&limbov1alpha1.Bundle{}, pluginIndex, pluginNames).
		// The API server's field selector, which a teardown's read of the
		// Bundle's history uses (cascadeInHistory): the fake client's version
		// of it answers with the Bundle as it is now.
		WithIndex(&limbov1alpha1.Bundle{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} })
	watched := map[schema.GroupVersionKind]time.Time{}
	for _, gvk := range kinds {
		mapper.Add(gvk, meta.RESTScopeNamespace)
		builder = builder.WithIndex(cachedObject(gvk), bundleIndex, bundleLabel)
		watched[gvk] = time.Now()
	}
	c := builder.WithObjects(append([]client.Object{b}, objects...)...).Build()
	reg := prometheus.NewRegistry()
	clk := clock.RealClock{}
	recorder := &record.FakeRecorder{}
	done := make(chan event.GenericEvent, 16)
	r := &Reconciler{
		Client: c, APIReader: c, Mapper: mapper, Recorder: recorder, Plugins: plugins, Clock: clk,
		Engine:    &softdelete.Engine{Client: c, Reader: c, Recorder: recorder, Clock: clk, Metrics: softdelete.NewMetrics(reg)},
		Metrics:   NewMetrics(reg),
		watcher:   &watcher{cache: countingCache{synced: true, calls: &atomic.Int32{}, mapper: mapper}, watched: watched},
		plans:     newBackgroundCalls[*plugin.Result](done, nil),
		teardowns: newBackgroundCalls[*plugin.TeardownResult](done, nil),
	}
	// No --cascade=orphan in the Bundle's history: none to read back.
	r.cascades.readBack.Store(b.UID, uint64(1)<<62)
	return &teardownFixture{r: r, c: c, reg: reg, bundle: b}
}

// editResources changes the resources of the fixture's Bundle on the fake API
// server, as a user's edit would.
func (f *teardownFixture) editResources(t *testing.T, edit func([]limbov1alpha1.Resource) []limbov1alpha1.Resource) {
	t.Helper()
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources = edit(cur.Spec.Resources)
	if err := f.c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
}

// reconcile runs one Reconcile of the fixture's Bundle.
func (f *teardownFixture) reconcile(t *testing.T) {
	t.Helper()
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

// reconcileUntil runs passes of the fixture's Bundle until done holds, failing
// t after 10 s with what has not happened: the plugins plan in the background,
// so the first passes may find them still planning.
func (f *teardownFixture) reconcileUntil(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)})
		if done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after 10s", what)
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
}

// resourceReady tells whether resource name is Ready in the fixture's Bundle's
// status.
func (f *teardownFixture) resourceReady(t *testing.T, name string) func() bool {
	return func() bool {
		state, _ := f.resourceState(t, name)
		return state == limbov1alpha1.ResourceReady
	}
}

// status is the fixture's Bundle's status as the API server has it.
func (f *teardownFixture) status(t *testing.T) limbov1alpha1.BundleStatus {
	t.Helper()
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); err != nil {
		t.Fatal(err)
	}
	return b.Status
}

// gauges are limbo_pending_deletions and limbo_bundle_resources{state} as the
// fixture's registry serves them.
func (f *teardownFixture) gauges(t *testing.T) (pending float64, resources map[string]float64) {
	t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	resources = map[string]float64{}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			switch fam.GetName() {
			case "limbo_pending_deletions":
				pending = m.GetGauge().GetValue()
			case "limbo_bundle_resources":
				if v := m.GetGauge().GetValue(); v != 0 {
					resources[m.GetLabel()[0].GetValue()] = v
				}
			}
		}
	}
	return pending, resources
}

// wantGauges fails unless limbo_pending_deletions is pending and
// limbo_bundle_resources counts resources by state, as the status says (when).
func (f *teardownFixture) wantGauges(t *testing.T, pending float64, resources map[string]float64, when string) {
	t.Helper()
	gotPending, gotResources := f.gauges(t)
	if gotPending != pending {
		t.Errorf("limbo_pending_deletions = %v while %s, want %v", gotPending, when, pending)
	}
	if !reflect.DeepEqual(gotResources, resources) {
		t.Errorf("limbo_bundle_resources = %v while %s, want %v (the status's)", gotResources, when, resources)
	}
}

// deletedBundle is a Bundle shop/web being torn down (background), with
// resources and the status of its last pass.
func deletedBundle(resources []limbov1alpha1.Resource, status limbov1alpha1.BundleStatus, finalizers ...string) *limbov1alpha1.Bundle {
	now := metav1.Now()
	return &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 1, DeletionTimestamp: &now,
			Finalizers: append([]string{limbov1alpha1.FinalizerTeardown}, finalizers...)},
		Spec:   limbov1alpha1.BundleSpec{Resources: resources},
		Status: status,
	}
}

// bundleConfigMap is a ConfigMap of the Bundle shop/web (UID b-uid), which
// controls it.
func bundleConfigMap(name string, annotations map[string]string, finalizers ...string) *corev1.ConfigMap {
	yes := true
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations, Finalizers: finalizers,
		Labels:          map[string]string{limbov1alpha1.LabelBundle: "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}}}}
}

func configMapResource(t *testing.T, name string) limbov1alpha1.Resource {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}})
	if err != nil {
		t.Fatal(err)
	}
	return limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: raw}}
}

// An orphan in limbo that the teardown releases to the reaper leaves the
// Bundle's count in limbo_pending_deletions (the reaper counts it), while the
// teardown, held by a dependency's finalizer, goes on: it is not counted twice
// for as long as the teardown lasts. The status still lists it, and
// limbo_bundle_resources follows the status the teardown writes.
func TestTeardownReleasedOrphanLeavesTheBundlesPendingCount(t *testing.T) {
	stamp := softdelete.FormatStamp(time.Now().Add(-time.Minute))
	old := bundleConfigMap("old", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: stamp})
	old.Labels[limbov1alpha1.LabelPendingDeletion] = "true"
	app := bundleConfigMap("app", nil, "example.com/hold")
	status := limbov1alpha1.BundleStatus{
		ObservedGeneration: 1,
		Resources:          []limbov1alpha1.ResourceStatus{{Name: "app", State: limbov1alpha1.ResourceReady}},
		ManagedKinds:       []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}},
	}
	setPending(&status, []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "old", Resource: "old"}})
	f := newTeardownFixture(t, deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "app")}, status), nil, old, app)
	// What the Bundle's last pass recorded.
	f.r.Metrics.record("shop/web", status)
	f.r.Engine.Metrics.SetPending("bundle/shop/web", 1)

	f.reconcile(t) // the first wave releases old
	var cur corev1.ConfigMap
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(old), &cur); err != nil || !softdelete.Released(&cur) {
		t.Fatalf("old: released %v (%v), want released", softdelete.Released(&cur), err)
	}
	if pending, _ := f.gauges(t); pending != 0 {
		t.Errorf("limbo_pending_deletions = %v once the wave released old to the reaper, want 0", pending)
	}
	for range 3 { // the next deletes app, which its finalizer holds
		f.reconcile(t)
		if st := f.status(t); st.PendingDeletionCount != 1 || meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionContentRemaining) == nil {
			t.Fatalf("status: %d pending, conditions %+v; want old listed, content remaining", st.PendingDeletionCount, st.Conditions)
		}
		f.wantGauges(t, 0, map[string]float64{"Ready": 1}, "the Bundle holds nothing in limbo (old is the reaper's)")
	}
}

// sweeper is a plugin whose teardown, like deorbit's, hands the engine the
// PersistentVolumeClaims of the Bundle's namespace, and is done once none is
// left (or done says so).
type sweeper struct{ done *atomic.Bool }

func (sweeper) Describe() plugin.Description { return plugin.Description{Name: "sweeper"} }

func (sweeper) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (s sweeper) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	if s.done.Load() {
		return &plugin.TeardownResult{Done: true, Message: "swept"}, nil
	}
	claims := &unstructured.UnstructuredList{}
	claims.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
	if err := req.Reader.List(ctx, claims, client.InNamespace(req.Bundle.Namespace)); err != nil {
		return nil, err
	}
	out := &plugin.TeardownResult{Message: fmt.Sprintf("%d claims left", len(claims.Items))}
	for i := range claims.Items {
		out.Items = append(out.Items, plugin.ObjectItem{Object: &claims.Items[i]})
	}
	return out, nil
}

// The items a plugin teardown stamps (deorbit's volumes) are counted in
// limbo_pending_deletions as the status lists them, from the first teardown pass
// on — in a process that never ran a pass of the Bundle too (a restart), which
// also records the status's resources in limbo_bundle_resources. Once the
// teardown lets the Bundle go, its series are forgotten, even while another
// finalizer keeps it.
func TestTeardownPluginItemsAreCounted(t *testing.T) {
	done := &atomic.Bool{}
	registry, err := plugin.NewRegistry(sweeper{done: done})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeper", DeletionDelay: "1h"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	f := newTeardownFixture(t, deletedBundle(resources, status, "example.com/keep"), registry, claim("data-0"), claim("data-1"), claim("data-2"))

	f.reconcile(t)
	if st := f.status(t); st.PendingDeletionCount != 3 {
		t.Fatalf("status lists %d pending deletions (%+v), want the 3 claims", st.PendingDeletionCount, st.PendingDeletions)
	}
	f.wantGauges(t, 3, map[string]float64{"Ready": 1}, "the teardown's status lists 3 claims in limbo")

	done.Store(true) // the claims went
	for _, name := range []string{"data-0", "data-1", "data-2"} {
		if err := f.c.Delete(context.Background(), claim(name)); err != nil {
			t.Fatal(err)
		}
	}
	f.reconcile(t)
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); err != nil || controllerutil.ContainsFinalizer(&b, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("the Bundle was not let go: %v, finalizers %v", err, b.Finalizers)
	}
	if pending, res := f.gauges(t); pending != 0 || len(res) != 0 {
		t.Errorf("after the teardown let the Bundle go: limbo_pending_deletions = %v, limbo_bundle_resources = %v; want both forgotten", pending, res)
	}
}

// A Bundle seen deleted with --cascade=foreground is let go without its plugin
// teardowns also once the garbage collector has removed foregroundDeletion —
// at once when its dependents are elsewhere, as deorbit's. Before, a teardown
// that came after the collector took the delete for a background one and ran
// deorbit: which mode a user got depended on which controller looked first.
func TestTeardownForegroundSeenBeforeTheCollectorWasDone(t *testing.T) {
	registry, err := plugin.NewRegistry(sweeper{done: &atomic.Bool{}})
	if err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeper", DeletionDelay: "1h"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	f := newTeardownFixture(t, deletedBundle(resources, status), registry, claim)
	f.r.cascades.observe(&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{UID: f.bundle.UID, DeletionTimestamp: f.bundle.DeletionTimestamp,
		Finalizers: []string{metav1.FinalizerDeleteDependents, limbov1alpha1.FinalizerTeardown}}})

	f.reconcile(t)
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); !apierrors.IsNotFound(err) && (err != nil || controllerutil.ContainsFinalizer(&b, limbov1alpha1.FinalizerTeardown)) {
		t.Fatalf("the Bundle was not let go: %v, finalizers %v", err, b.Finalizers)
	}
	var cur corev1.PersistentVolumeClaim
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &cur); err != nil {
		t.Fatal(err)
	}
	if _, stamped := cur.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
		t.Errorf("the plugin's teardown ran: the claim is stamped (%v)", cur.Annotations)
	}
}

// A plugin teardown's grace runs from the Bundle's deletion. The stamps a
// teardown that gave up left on the debris name only the Bundle's name and
// resource: a Bundle shop/web made again (GitOps) and deleted finds its
// predecessor's, 3 days old, on the claim. Before, its first teardown pass
// deleted the claim at once; its countdown starts again.
func TestTeardownPluginItemsOfAnEarlierBundleWaitTheGrace(t *testing.T) {
	registry, err := plugin.NewRegistry(sweeper{done: &atomic.Bool{}})
	if err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data", UID: "pvc-uid",
		Labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: softdelete.FormatStamp(time.Now().Add(-72 * time.Hour)),
			limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationPluginResource: "shop/web/sweep"}}}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "sweeper", DeletionDelay: "1h"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	f := newTeardownFixture(t, deletedBundle(resources, status), registry, claim)

	f.reconcile(t)
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); err != nil {
		t.Fatal(err)
	}
	var cur corev1.PersistentVolumeClaim
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &cur); err != nil {
		t.Fatalf("the claim stamped for an earlier Bundle shop/web was deleted by the first teardown pass: %v", err)
	}
	stamp, err := time.Parse(time.RFC3339, cur.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil || stamp.Before(b.DeletionTimestamp.Time) {
		t.Errorf("the claim's stamp is %q (%v), want one from the Bundle's deletion (%v) on", cur.Annotations[limbov1alpha1.AnnotationDeletionTimestamp], err, b.DeletionTimestamp)
	}
	if st := f.status(t); len(st.PendingDeletions) != 1 || st.PendingDeletions[0].DeleteAfter == nil || st.PendingDeletions[0].DeleteAfter.Time.Before(b.DeletionTimestamp.Add(time.Hour)) {
		t.Errorf("pendingDeletions = %+v, want the claim due an hour after the Bundle's deletion", st.PendingDeletions)
	}
}

// Of the entries a teardown's status carries over from the Bundle's passes, the
// Bundle counts in limbo only those of objects it still controls, and another
// cluster's items (which only their plugin's teardown decides).
func TestHeldObjectsHolds(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	held := heldBy([]*unstructured.Unstructured{testObject(configMapGVK, "db"), testObject(deploymentGVK, "app")})
	entry := func(apiVersion, kind, namespace, name, cluster string) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name, Cluster: cluster}
	}
	for _, tc := range []struct {
		name string
		pd   limbov1alpha1.PendingDeletion
		want bool
	}{
		{"an object the Bundle controls", entry("v1", "ConfigMap", "shop", "db", ""), true},
		{"in another version of its kind", entry("apps/v1beta2", "Deployment", "shop", "app", ""), true},
		{"released to the reaper, or gone", entry("v1", "ConfigMap", "shop", "old", ""), false},
		{"another kind of the name", entry("v1", "Secret", "shop", "db", ""), false},
		{"a plugin's item of another namespace (cancelled)", entry("v1", "ConfigMap", "other", "db", ""), false},
		{"a Tombstone (cancelled)", entry(limbov1alpha1.GroupVersion.String(), "Tombstone", "shop", "db", ""), false},
		{"an item of another cluster", entry("v1", "PersistentVolumeClaim", "shop", "data", "workload-kubeconfig"), true},
	} {
		if got := held.holds(b, tc.pd); got != tc.want {
			t.Errorf("%s: holds(%+v) = %v, want %v", tc.name, tc.pd, got, tc.want)
		}
	}
}
