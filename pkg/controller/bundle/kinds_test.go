package bundle

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

var (
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// spec is a resource of a test Bundle: an object of kind gvk named name, or a
// plugin resource when gvk is empty; it references refs.
type spec struct {
	name string
	gvk  schema.GroupVersionKind
	refs []string
}

// testPlan parses a Bundle of specs in namespace team; the test fails on a
// spec error.
func testPlan(t *testing.T, specs ...spec) *bundlespec.Plan {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{configMapGVK, secretGVK, deploymentGVK} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"}}
	for _, s := range specs {
		r := limbov1alpha1.Resource{Name: s.name}
		for _, ref := range s.refs {
			r.References = append(r.References, limbov1alpha1.Reference{Resource: ref})
		}
		if s.gvk.Empty() {
			r.Plugin = &limbov1alpha1.PluginResource{Name: "gc", Spec: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}
		} else {
			raw, err := json.Marshal(testObject(s.gvk, s.name).Object)
			if err != nil {
				t.Fatal(err)
			}
			r.Object = &runtime.RawExtension{Raw: raw}
		}
		b.Spec.Resources = append(b.Spec.Resources, r)
	}
	plan, errs := bundlespec.Parse(b, mapper, anyPlugin{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return plan
}

// anyPlugin is a plugin catalog that accepts every plugin resource.
type anyPlugin struct{}

func (anyPlugin) ValidateSpec(string, *apiextensionsv1.JSON, []string) error { return nil }

func testObject(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("team")
	u.SetName(name)
	return u
}

// kindsOf is every kind a Bundle uses or used: its plan's objects', and those its
// last status names (managedKinds, resources' objects, pendingDeletions), sorted,
// never Tombstones.
func TestKindsOf(t *testing.T) {
	tombstone := limbov1alpha1.TombstoneGVK
	for _, tc := range []struct {
		name   string
		plan   []spec // nil: no plan
		status limbov1alpha1.BundleStatus
		want   []schema.GroupVersionKind
	}{
		{name: "nothing", want: []schema.GroupVersionKind{}},
		{name: "the plan's objects, not its plugins",
			plan: []spec{{name: "db", gvk: deploymentGVK}, {name: "cfg", gvk: configMapGVK}, {name: "gc"}, {name: "cfg2", gvk: configMapGVK}},
			want: []schema.GroupVersionKind{configMapGVK, deploymentGVK}},
		{name: "what the last status names",
			status: limbov1alpha1.BundleStatus{
				ManagedKinds:     []limbov1alpha1.ManagedKind{{APIVersion: "apps/v1", Kind: "Deployment"}},
				Resources:        []limbov1alpha1.ResourceStatus{{Name: "s", Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s"}}, {Name: "gc"}},
				PendingDeletions: []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Name: "old"}, {APIVersion: tombstone.GroupVersion().String(), Kind: tombstone.Kind, Name: "ts"}},
			},
			want: []schema.GroupVersionKind{configMapGVK, secretGVK, deploymentGVK}},
		{name: "plan and status together, once each",
			plan:   []spec{{name: "cfg", gvk: configMapGVK}},
			status: limbov1alpha1.BundleStatus{ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}, {APIVersion: "v1", Kind: "Secret"}}},
			want:   []schema.GroupVersionKind{configMapGVK, secretGVK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plan *bundlespec.Plan
			if tc.plan != nil {
				plan = testPlan(t, tc.plan...)
			}
			b := &limbov1alpha1.Bundle{Status: tc.status}
			if got := kindsOf(b, plan); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("kindsOf = %v, want %v", got, tc.want)
			}
		})
	}
}

// kindList adds the kinds of a pass's generated objects to kindsOf's, and the
// kinds the controller watches whose informers have synced.
func TestKindList(t *testing.T) {
	jobGVK := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	w := &watcher{
		cache:   syncCache{synced: map[schema.GroupVersionKind]bool{configMapGVK: true, jobGVK: true}},
		watched: map[schema.GroupVersionKind]time.Time{configMapGVK: {}, jobGVK: {}, limitRangeGVK: {}},
	}
	p := newPass(&Reconciler{watcher: w}, &limbov1alpha1.Bundle{Status: limbov1alpha1.BundleStatus{ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "Secret"}}}})
	p.plan = testPlan(t, spec{name: "cfg", gvk: configMapGVK})
	p.kinds[deploymentGVK] = true // generated by a plugin
	p.kinds[limbov1alpha1.TombstoneGVK] = true
	if got, want := p.kindList(context.Background()), []schema.GroupVersionKind{configMapGVK, secretGVK, deploymentGVK, jobGVK}; !reflect.DeepEqual(got, want) {
		t.Errorf("kindList = %v, want %v (LimitRange's informer has not synced)", got, want)
	}
}

// syncCache is a cache.Cache whose informers have synced for the kinds in
// synced; nothing else of it is used.
type syncCache struct {
	cache.Cache
	synced map[schema.GroupVersionKind]bool
}

func (c syncCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	return syncInformer{synced: c.synced[obj.GetObjectKind().GroupVersionKind()]}, nil
}

type syncInformer struct {
	cache.Informer
	synced bool
}

func (i syncInformer) HasSynced() bool { return i.synced }

// withWatchedKinds adds each watched kind of another group and kind, one
// version of each, and sorts.
func TestWithWatchedKinds(t *testing.T) {
	deploymentV1beta2 := schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}
	jobGVK := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	for _, tc := range []struct {
		name           string
		kinds, watched []schema.GroupVersionKind
		want           []schema.GroupVersionKind
	}{
		{name: "nothing watched", kinds: []schema.GroupVersionKind{configMapGVK}, want: []schema.GroupVersionKind{configMapGVK}},
		{name: "the Bundle's own kinds watched", kinds: []schema.GroupVersionKind{configMapGVK}, watched: []schema.GroupVersionKind{configMapGVK}, want: []schema.GroupVersionKind{configMapGVK}},
		{name: "other kinds added, sorted", kinds: []schema.GroupVersionKind{configMapGVK}, watched: []schema.GroupVersionKind{jobGVK, secretGVK},
			want: []schema.GroupVersionKind{configMapGVK, secretGVK, jobGVK}},
		{name: "another version of the Bundle's kind is not listed again", kinds: []schema.GroupVersionKind{deploymentGVK}, watched: []schema.GroupVersionKind{deploymentV1beta2},
			want: []schema.GroupVersionKind{deploymentGVK}},
		{name: "two watched versions of a kind: one", watched: []schema.GroupVersionKind{deploymentV1beta2, deploymentGVK},
			want: []schema.GroupVersionKind{deploymentGVK}},
		{name: "Tombstones are never listed", watched: []schema.GroupVersionKind{limbov1alpha1.TombstoneGVK}, want: []schema.GroupVersionKind{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withWatchedKinds(tc.kinds, tc.watched); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("withWatchedKinds = %v, want %v", got, tc.want)
			}
		})
	}
}

// servedVersions keeps one version of each kind: the first served of those
// named, else the kind's preferred version; a kind not served at all keeps its
// first.
func TestServedVersions(t *testing.T) {
	hpa := func(v string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "autoscaling", Version: v, Kind: "HorizontalPodAutoscaler"}
	}
	widget := func(v string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "example.com", Version: v, Kind: "Widget"}
	}
	gadget := schema.GroupVersionKind{Group: "gone.example.com", Version: "v1", Kind: "Gadget"}
	event := schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	eventsEvent := schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{hpa("v2").GroupVersion(), widget("v1").GroupVersion(), configMapGVK.GroupVersion(), eventsEvent.GroupVersion()})
	for _, gvk := range []schema.GroupVersionKind{hpa("v2"), hpa("v1"), widget("v1"), configMapGVK, event, eventsEvent} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	r := &Reconciler{Mapper: mapper}
	for _, tc := range []struct {
		name        string
		kinds, want []schema.GroupVersionKind
	}{
		{"one version each", []schema.GroupVersionKind{configMapGVK, hpa("v1")}, []schema.GroupVersionKind{configMapGVK, hpa("v1")}},
		{"two served versions: the first", []schema.GroupVersionKind{hpa("v1"), hpa("v2")}, []schema.GroupVersionKind{hpa("v1")}},
		{"a version no longer served: the next", []schema.GroupVersionKind{hpa("v2beta1"), hpa("v2")}, []schema.GroupVersionKind{hpa("v2")}},
		{"only a version no longer served: the preferred one", []schema.GroupVersionKind{widget("v1beta1")}, []schema.GroupVersionKind{widget("v1")}},
		{"a kind not served at all", []schema.GroupVersionKind{gadget, configMapGVK}, []schema.GroupVersionKind{gadget, configMapGVK}},
		{"a kind served under two groups: once, under the first", []schema.GroupVersionKind{eventsEvent, event}, []schema.GroupVersionKind{event}},
		{"only under its second group", []schema.GroupVersionKind{eventsEvent}, []schema.GroupVersionKind{event}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.servedVersions(tc.kinds); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("servedVersions(%v) = %v, want %v", tc.kinds, got, tc.want)
			}
		})
	}
}

// kindsOfEntries is the distinct kinds of pendingDeletions entries, in the order
// they first appear.
// itemLookup looks for plugin object items by the entries of this cluster that
// are no Tombstone (and that its filter keeps) — or, when the status's list is
// cut, by every kind the status records but Tombstone: an entry left out may be
// of any of them.
func TestItemLookup(t *testing.T) {
	tombstone := limbov1alpha1.PendingDeletion{APIVersion: limbov1alpha1.TombstoneGVK.GroupVersion().String(), Kind: limbov1alpha1.TombstoneGVK.Kind, Name: "ts"}
	node := limbov1alpha1.PendingDeletion{APIVersion: "csi-baremetal.dell.com/v1", Kind: "Csibmnode", Name: "n1", Resource: "nodes"}
	remote := limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "data", Cluster: "workload", Resource: "deorbit"}
	kept := limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: "ConfigMap", Name: "kept", Resource: "gone"}
	managed := []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}, {APIVersion: "v1", Kind: "Secret"},
		{APIVersion: limbov1alpha1.TombstoneGVK.GroupVersion().String(), Kind: limbov1alpha1.TombstoneGVK.Kind}}
	notNodes := func(pd limbov1alpha1.PendingDeletion) bool { return pd.Resource != "nodes" }
	for _, tc := range []struct {
		name      string
		st        limbov1alpha1.BundleStatus
		wantKinds []string
	}{
		{"listed in full: the kinds of the entries kept",
			limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{tombstone, node, remote, kept}, PendingDeletionCount: 4, ManagedKinds: managed},
			[]string{"/v1, Kind=ConfigMap"}},
		{"nothing to look for",
			limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{tombstone, remote}, PendingDeletionCount: 2, ManagedKinds: managed},
			nil},
		{"cut: every kind recorded but Tombstone",
			limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{tombstone, remote}, PendingDeletionCount: 2 + 3000, ManagedKinds: managed},
			[]string{"/v1, Kind=ConfigMap", "/v1, Kind=Secret"}},
		{"written before the count existed: in full",
			limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{kept}, ManagedKinds: managed},
			[]string{"/v1, Kind=ConfigMap"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, k := range itemLookup(&tc.st, notNodes) {
				got = append(got, k.String())
			}
			if !reflect.DeepEqual(got, tc.wantKinds) {
				t.Errorf("kinds %v, want %v", got, tc.wantKinds)
			}
		})
	}
}

func TestKindsOfEntries(t *testing.T) {
	entries := []limbov1alpha1.PendingDeletion{
		{APIVersion: "v1", Kind: "Secret", Name: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "b"},
		{APIVersion: "v1", Kind: "Secret", Name: "c"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"},
	}
	if got, want := kindsOfEntries(entries), []schema.GroupVersionKind{secretGVK, configMapGVK, deploymentGVK}; !reflect.DeepEqual(got, want) {
		t.Errorf("kindsOfEntries = %v, want %v", got, want)
	}
	if got := kindsOfEntries(nil); len(got) != 0 {
		t.Errorf("kindsOfEntries(nil) = %v, want none", got)
	}
}

// An object's pendingDeletions key is the key of its entry.
func TestPendingKey(t *testing.T) {
	obj := testObject(deploymentGVK, "web")
	entry := limbov1alpha1.PendingDeletion{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	if objectPendingKey(obj) != pendingKey(entry) {
		t.Errorf("objectPendingKey = %q, pendingKey = %q; want them equal", objectPendingKey(obj), pendingKey(entry))
	}
	other := entry
	other.Namespace = "other"
	if pendingKey(other) == pendingKey(entry) {
		t.Error("entries in two namespaces have one key")
	}
}

// lastResources names the resource that last declared an object: from the last
// status's resources, else from the pending deletion that carried it on.
func TestLastResources(t *testing.T) {
	b := &limbov1alpha1.Bundle{Status: limbov1alpha1.BundleStatus{
		Resources: []limbov1alpha1.ResourceStatus{
			{Name: "gc"},
			{Name: "db", Object: &limbov1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "db"}},
			{Name: "cert", Object: &limbov1alpha1.ObjectReference{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "web"}},
			{Name: "shared", Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "shared"}},
			{Name: "shared-again", Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "shared"}},
			{Name: "audit", Object: &limbov1alpha1.ObjectReference{APIVersion: "events.k8s.io/v1", Kind: "Event", Name: "audit"}},
		},
		PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "old", Resource: "config"},
			{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "api", Resource: "cert-api"},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "shared", Resource: "was-shared"}, // a resource names it first
			{APIVersion: "v1", Kind: "ConfigMap", Name: "remote", Cluster: "c1", Resource: "deorbit"},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "later", Resource: ""},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "later", Resource: "later"},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "made", Resource: ""},
		},
	}}
	generated := testObject(configMapGVK, "made")
	generated.SetAnnotations(map[string]string{limbov1alpha1.AnnotationGeneratedBy: "generator"})
	// Two kinds of one name in two groups: each is its own resource's.
	acmeCert := schema.GroupVersionKind{Group: "acme.example.com", Version: "v1", Kind: "Certificate"}
	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		want string
	}{
		{testObject(deploymentGVK, "db"), "db"},
		{testObject(configMapGVK, "old"), "config"},
		{testObject(configMapGVK, "db"), ""}, // same name, other kind
		{testObject(secretGVK, "never"), ""},
		{testObject(acmeCert, "web"), ""},
		{testObject(acmeCert, "api"), ""},
		{testObject(acmeCert.GroupKind().WithVersion("v2"), "web"), ""},
		{testObject(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}, "web"), "cert"},
		{testObject(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1beta1", Kind: "Certificate"}, "api"), "cert-api"},
		// The first resource that names an object, before any pending deletion.
		{testObject(configMapGVK, "shared"), "shared"},
		// Another cluster's item of the same kind and name is not this object.
		{testObject(configMapGVK, "remote"), ""},
		// An entry without a resource does not stand for one; a later one does.
		{testObject(configMapGVK, "later"), "later"},
		{generated, "generator"},
		// An Event under either group is one object (StoredKind).
		{testObject(schema.GroupVersionKind{Version: "v1", Kind: "Event"}, "audit"), "audit"},
	} {
		if got := lastResourcesOf(b).of(tc.obj); got != tc.want {
			t.Errorf("lastResources.of(%s %s) = %q, want %q", tc.obj.GetKind(), tc.obj.GetName(), got, tc.want)
		}
	}
}

// The previous status.resources names objects; one that the pass neither
// declared nor accounted for otherwise (a resource dropped in the write that
// moved the Bundle to this shard) makes the pass ask the API server. Objects of
// other namespaces, entries without an object, and Tombstones do not.
func TestUnaccountedResourceObjects(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) *limbov1alpha1.ObjectReference {
		return &limbov1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
	}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	b.Status.Resources = []limbov1alpha1.ResourceStatus{
		{Name: "keep", Object: obj("v1", "ConfigMap", "ns", "keep")},
		{Name: "deploy", Object: obj("apps/v1beta2", "Deployment", "", "web")},
		{Name: "elsewhere", Object: obj("v1", "ConfigMap", "other", "elsewhere")},
		{Name: "job"},
		{Name: "ts", Object: obj(limbov1alpha1.GroupVersion.String(), "Tombstone", "ns", "ts")},
	}
	known := map[string]bool{
		bundlespec.ObjectKey(configMapGVK.GroupKind(), "keep"): true,
		bundlespec.ObjectKey(deploymentGVK.GroupKind(), "web"): true, // any version of the kind
	}
	accounted := func(key string) bool { return known[key] }
	if unaccountedResourceObjects(b, accounted) {
		t.Errorf("every object the status names is accounted for, but the pass would ask")
	}
	b.Status.Resources = append(b.Status.Resources, limbov1alpha1.ResourceStatus{Name: "drop", Object: obj("v1", "ConfigMap", "ns", "drop")})
	if !unaccountedResourceObjects(b, accounted) {
		t.Errorf("ConfigMap drop is named by the status and not accounted for, but the pass would not ask")
	}
	if unaccountedResourceObjects(&limbov1alpha1.Bundle{}, accounted) {
		t.Errorf("a Bundle without a status: the pass would ask")
	}
}
