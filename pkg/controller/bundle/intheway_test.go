package bundle

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

var (
	takenKey   = bundlespec.ObjectKey(configMapKind.GroupKind(), "taken")
	waitingKey = bundlespec.ObjectKey(configMapKind.GroupKind(), "waiting")
)

func shopBundle(uid types.UID) *limbov1alpha1.Bundle {
	return &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: uid}}
}

// The memory is per object of the Bundle: what a sync found of one object
// says nothing of another, the last sync of an object decides, and a Bundle
// created again under the name inherits nothing.
func TestObjectsInTheWayRecord(t *testing.T) {
	var w objectsInTheWay
	shop := shopBundle("u1")
	if w.has(shop, takenKey) {
		t.Fatal("an empty memory has an object in the way")
	}
	w.record(shop, takenKey, true)
	w.record(shop, waitingKey, false)
	if !w.has(shop, takenKey) {
		t.Error("the object found in the way is not remembered")
	}
	if w.has(shop, waitingKey) {
		t.Error("the object found not in the way is remembered as in the way")
	}
	if w.has(shopBundle("u2"), takenKey) {
		t.Error("a Bundle created again under the name inherits the object in the way")
	}
	other := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cafe", UID: "u3"}}
	if w.has(other, takenKey) {
		t.Error("another Bundle of the namespace has the object in the way")
	}

	w.record(shop, takenKey, false) // adopted, gone, let go by its controller
	if w.has(shop, takenKey) {
		t.Error("an object found not in the way by the last sync is still remembered as in the way")
	}
	if len(w.bundles) != 0 {
		t.Errorf("a Bundle with nothing in the way is kept: %v", w.bundles)
	}

	w.record(shop, takenKey, true)
	w.record(shopBundle("u2"), waitingKey, true) // the Bundle created again
	if w.has(shop, takenKey) || !w.has(shopBundle("u2"), waitingKey) {
		t.Errorf("the Bundle created again: %v, want only its own object in the way", w.bundles)
	}
	w.forget(types.NamespacedName{Namespace: "ns", Name: "shop"})
	if len(w.bundles) != 0 {
		t.Errorf("a Bundle forgotten is kept: %v", w.bundles)
	}
}

// A pass forgets the objects in the way that its spec no longer declares
// (templates, generators, stale plans alike), and keeps those it does.
func TestObjectsInTheWayKeepDeclared(t *testing.T) {
	var w objectsInTheWay
	shop := shopBundle("u1")
	stale := bundlespec.ObjectKey(configMapKind.GroupKind(), "stale")
	for _, key := range []string{takenKey, waitingKey, stale} {
		w.record(shop, key, true)
	}
	w.keepDeclared(shop, map[string]string{takenKey: "gen"}, map[string]string{stale: "old-gen"})
	for key, want := range map[string]bool{takenKey: true, stale: true, waitingKey: false} {
		if got := w.has(shop, key); got != want {
			t.Errorf("%s in the way = %v after a pass, want %v", key, got, want)
		}
	}
	w.keepDeclared(shop, map[string]string{})
	if len(w.bundles) != 0 {
		t.Errorf("a Bundle that declares nothing in the way is kept: %v", w.bundles)
	}
	w.record(shopBundle("u0"), takenKey, true) // the Bundle of the name before
	w.keepDeclared(shop, map[string]string{takenKey: "gen"})
	if len(w.bundles) != 0 {
		t.Errorf("the memory of the Bundle of the name before is kept: %v", w.bundles)
	}
}

// An object is read first when this process found it in the way, whatever
// resource declares it; the status last written says it of an object
// resource's one object only: a generator's status names its first object
// and tells the state of its last that is not Ready.
func TestWasInTheWay(t *testing.T) {
	ref := func(name string) *limbov1alpha1.ObjectReference {
		return &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: name}
	}
	notOwned := func(resource, object string) limbov1alpha1.ResourceStatus {
		return limbov1alpha1.ResourceStatus{Name: resource, State: limbov1alpha1.ResourceError, Reason: limbov1alpha1.ReasonNotOwned, Object: ref(object)}
	}
	plan := &bundlespec.Plan{Resources: map[string]*bundlespec.Resource{
		"taken": {Resource: limbov1alpha1.Resource{Name: "taken", Object: &runtime.RawExtension{}}},
		"gen":   {Resource: limbov1alpha1.Resource{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "test"}}},
	}}
	for _, tc := range []struct {
		name     string
		status   []limbov1alpha1.ResourceStatus
		found    string // the key this process found in the way ("": none)
		resource string
		key      string
		want     bool
	}{
		{name: "object resource, status NotOwned", status: []limbov1alpha1.ResourceStatus{notOwned("taken", "taken")}, resource: "taken", key: takenKey, want: true},
		{name: "object resource, status ControlledByOther", status: []limbov1alpha1.ResourceStatus{{Name: "taken", State: limbov1alpha1.ResourceError,
			Reason: limbov1alpha1.ReasonControlledByOther, Object: ref("taken")}}, resource: "taken", key: takenKey, want: true},
		{name: "object resource, status of another object (the template renamed it)", status: []limbov1alpha1.ResourceStatus{notOwned("taken", "old-name")}, resource: "taken", key: takenKey},
		{name: "object resource, status InProgress", status: []limbov1alpha1.ResourceStatus{{Name: "taken", State: limbov1alpha1.ResourceInProgress, Object: ref("taken")}},
			resource: "taken", key: takenKey},
		{name: "object resource, status of another resource", status: []limbov1alpha1.ResourceStatus{notOwned("other", "taken")}, resource: "taken", key: takenKey},
		{name: "generator, status NotOwned naming its first object", status: []limbov1alpha1.ResourceStatus{notOwned("gen", "taken")}, resource: "gen", key: takenKey},
		{name: "generator, found by this process", status: []limbov1alpha1.ResourceStatus{{Name: "gen", State: limbov1alpha1.ResourceInProgress, Object: ref("taken")}},
			found: takenKey, resource: "gen", key: takenKey, want: true},
		{name: "generator, another object found by this process", found: takenKey, resource: "gen", key: waitingKey},
		{name: "object resource, found by this process, status not written", found: takenKey, resource: "taken", key: takenKey, want: true},
		{name: "nothing known", resource: "taken", key: takenKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := shopBundle("u1")
			b.Status.Resources = tc.status
			p := &pass{r: &Reconciler{}, bundle: b, plan: plan}
			if tc.found != "" {
				p.r.inTheWay.record(b, tc.found, true)
			}
			if got := p.wasInTheWay(tc.resource, tc.key); got != tc.want {
				t.Errorf("wasInTheWay(%q, %q) = %v, want %v", tc.resource, tc.key, got, tc.want)
			}
		})
	}
}

// An event of an object wakes the Bundle its label names and every Bundle of
// its namespace whose last sync found it in the way — a Bundle waiting to adopt
// it adopts it when its controller lets it go, not at the next recheck — and
// no other: not one that found another object in the way, nor one of another
// namespace.
func TestWatchEventWakesTheBundlesTheObjectWasInTheWayOf(t *testing.T) {
	w := &watcher{inTheWay: &objectsInTheWay{}}
	w.inTheWay.record(shopBundle("u1"), takenKey, true)
	w.inTheWay.record(&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cafe", UID: "u2"}}, takenKey, true)
	w.inTheWay.record(&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bar", UID: "u3"}}, waitingKey, true)
	w.inTheWay.record(&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "deli", UID: "u4"}}, takenKey, true)

	taken := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "taken",
		Labels: map[string]string{limbov1alpha1.LabelBundle: "old"}}}
	got := w.bundlesOf(configMapKind.GroupKind(), taken)
	want := []reconcile.Request{
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "old"}},
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cafe"}},
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "shop"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests = %v, want %v", got, want)
	}
	if got := w.bundlesOf(schema.GroupKind{Kind: "Secret"}, taken); len(got) != 1 {
		t.Errorf("a Secret of the name wakes %v, want its labelled Bundle only", got)
	}
}
