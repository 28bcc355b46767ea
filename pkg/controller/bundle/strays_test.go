package bundle

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// unlabelled is o without its limbo.dev/bundle label, as
// `kubectl label configmap <name> limbo.dev/bundle-` leaves it.
func unlabelled[T client.Object](o T) T {
	labels := o.GetLabels()
	delete(labels, limbov1alpha1.LabelBundle)
	o.SetLabels(labels)
	return o
}

// A declared object whose limbo.dev/bundle label another writer removed is in
// no listing of the Bundle's; the Bundle still controls it. Its teardown let
// the Bundle go without it, and the garbage collector, which goes by the owner
// reference, deleted it at once, its 1h delay ignored. Found by name from the
// status, it is relabelled and released with its delay like the others.
func TestTeardownRelabelsAStray(t *testing.T) {
	db := unlabelled(bundleConfigMap("db", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	status := limbov1alpha1.BundleStatus{
		ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "db", State: limbov1alpha1.ResourceBlocked,
			Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "db"}}},
		ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}},
	}
	f := newTeardownFixture(t, deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "db")}, status), nil, db)
	for range 4 {
		f.reconcile(t)
	}
	live := f.liveConfigMap(t, "db")
	if live == nil {
		t.Fatal("ConfigMap db is gone: deleted at once, its 1h delay ignored")
	}
	if metav1.IsControlledBy(live, f.bundle) {
		t.Errorf("ConfigMap db is still controlled by the Bundle after its teardown: the garbage collector deletes it at once (owners %v)", live.OwnerReferences)
	}
	if live.Labels[limbov1alpha1.LabelBundle] != "web" || live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
		t.Errorf("ConfigMap db: labels %v, annotations %v; want its bundle label back and its countdown started (released)", live.Labels, live.Annotations)
	}
}

// An orphan in limbo whose limbo.dev/bundle label another writer removed left
// the Bundle's pendingDeletions at the next pass and was never deleted — nor
// found by the teardown, the garbage collector deleting it at once when the
// Bundle went. Found by name from the status, it is relabelled and stays
// listed, counting down.
func TestPassRelabelsAStrayInLimbo(t *testing.T) {
	old := unlabelled(bundleConfigMap("old", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h",
		limbov1alpha1.AnnotationDeletionTimestamp: metav1.Now().UTC().Format("2006-01-02T15:04:05Z")}))
	old.Labels[limbov1alpha1.LabelPendingDeletion] = "true"
	b := livingBundle(cmResource(t, "keep", nil))
	b.Status = limbov1alpha1.BundleStatus{
		ObservedGeneration: 1,
		PendingDeletions:   []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "old"}},
		ManagedKinds:       []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}},
	}
	f := newTeardownFixture(t, b, nil, old)
	f.reconcile(t)
	live := f.liveConfigMap(t, "old")
	if live == nil {
		t.Fatal("ConfigMap old is gone: deleted before its deadline")
	}
	if live.Labels[limbov1alpha1.LabelBundle] != "web" {
		t.Errorf("ConfigMap old: labels %v, want its bundle label back", live.Labels)
	}
	listed := false
	for _, pd := range f.status(t).PendingDeletions {
		listed = listed || (pd.Kind == "ConfigMap" && pd.Name == "old")
	}
	if !listed {
		t.Errorf("pendingDeletions %+v: want ConfigMap old still listed, counting down", f.status(t).PendingDeletions)
	}
}

// What a listing shows, the status records that is gone, and what the Bundle
// does not control cost no write: only a stray is relabelled.
func TestRecordedStraysOnlyStrays(t *testing.T) {
	labelled := bundleConfigMap("labelled", nil)
	stray := unlabelled(bundleConfigMap("stray", nil))
	foreign := foreignConfigMap("foreign", nil, "")
	record := func(names ...string) (out []limbov1alpha1.ResourceStatus) {
		for _, n := range names {
			out = append(out, limbov1alpha1.ResourceStatus{Name: n, Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: n}})
		}
		return out
	}
	b := livingBundle()
	b.Status.Resources = record("labelled", "stray", "foreign", "gone")
	f := newTeardownFixture(t, b, nil, labelled, stray, foreign)
	strays, err := f.r.recordedStrays(context.Background(), b, func(key string) bool {
		return key == bundlespec.ObjectKey(schema.GroupKind{Kind: "ConfigMap"}, "labelled")
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(strays) != 1 || strays[0].GetName() != "stray" || strays[0].GetLabels()[limbov1alpha1.LabelBundle] != "web" {
		t.Errorf("strays %v, want ConfigMap stray, relabelled", strays)
	}
	if got := f.liveConfigMap(t, "foreign").Labels; got[limbov1alpha1.LabelBundle] != "" {
		t.Errorf("ConfigMap foreign got labels %v: the Bundle does not control it", got)
	}
}
