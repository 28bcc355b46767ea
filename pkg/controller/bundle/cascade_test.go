package bundle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

func TestOrphanedByCollector(t *testing.T) {
	controller := []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "b-1", Controller: ptr.To(true)}}
	for _, tc := range []struct {
		name        string
		owners      []metav1.OwnerReference
		annotations map[string]string
		labels      map[string]string
		want        bool
	}{
		{name: "controlled", owners: controller},
		{name: "no controller, not released: the collector's work", want: true},
		{name: "an owner that is not a controller", owners: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "x", UID: "x"}}, want: true},
		{name: "released by a teardown", annotations: map[string]string{limbov1alpha1.AnnotationReleased: "2026-11-22T00:00:00Z"}},
		{name: "in limbo", labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &unstructured.Unstructured{}
			o.SetOwnerReferences(tc.owners)
			o.SetAnnotations(tc.annotations)
			o.SetLabels(tc.labels)
			if got := orphanedByCollector(o); got != tc.want {
				t.Errorf("orphanedByCollector = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOrphanCascadesRememberTheFinalizer(t *testing.T) {
	bundle := func(uid string, deleting bool, finalizers ...string) *limbov1alpha1.Bundle {
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: types.UID("u-" + uid), Finalizers: finalizers}}
		if deleting {
			b.DeletionTimestamp = &metav1.Time{}
		}
		return b
	}
	var c orphanCascades
	p := c.predicate()
	live := bundle("1", false, limbov1alpha1.FinalizerTeardown)
	orphaning := bundle("1", true, metav1.FinalizerOrphanDependents, limbov1alpha1.FinalizerTeardown)
	orphaned := bundle("1", true, limbov1alpha1.FinalizerTeardown) // the collector is done
	background := bundle("2", true, limbov1alpha1.FinalizerTeardown)

	steps := []struct {
		name string
		run  func() bool
		uid  string
		want bool
	}{
		{"a live Bundle", func() bool { return p.Create(event.CreateEvent{Object: live}) }, "1", false},
		{"deleted with --cascade=orphan", func() bool { return p.Update(event.UpdateEvent{ObjectOld: live, ObjectNew: orphaning}) }, "1", true},
		{"the collector removed its finalizer", func() bool { return p.Update(event.UpdateEvent{ObjectOld: orphaning, ObjectNew: orphaned}) }, "1", true},
		{"another Bundle deleted in the background", func() bool { return p.Create(event.CreateEvent{Object: background}) }, "2", false},
		{"gone", func() bool { return p.Delete(event.DeleteEvent{Object: orphaned}) }, "1", false},
	}
	for _, s := range steps {
		if !s.run() {
			t.Errorf("%s: the predicate dropped the event; it must let every event through", s.name)
		}
		if got := c.has(bundle(s.uid, false).UID); got != s.want {
			t.Errorf("%s: remembered %v, want %v", s.name, got, s.want)
		}
	}
}

func TestDeletedWithOrphanCascade(t *testing.T) {
	declared := &bundlespec.Plan{Objects: map[string]string{bundlespec.ObjectKey(schema.GroupKind{Kind: "ConfigMap"}, "db"): "db"}}
	object := func(name string, controlled bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		if controlled {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "b-1", Controller: ptr.To(true)}})
		}
		return u
	}
	for _, tc := range []struct {
		name       string
		finalizers []string
		remembered bool
		plan       *bundlespec.Plan
		objects    []*unstructured.Unstructured
		want       bool
	}{
		{name: "the orphan finalizer", finalizers: []string{metav1.FinalizerOrphanDependents}, want: true},
		{name: "seen with the orphan finalizer", remembered: true, want: true},
		{name: "declared objects still controlled: background", plan: declared, objects: []*unstructured.Unstructured{object("db", true)}},
		{name: "a declared object lost its controller: the collector orphaned it", plan: declared, objects: []*unstructured.Unstructured{object("db", false)}, want: true},
		{name: "an undeclared object without a controller is no evidence", plan: declared, objects: []*unstructured.Unstructured{object("other", false)}},
		{name: "no plan (an invalid spec): no evidence", objects: []*unstructured.Unstructured{object("db", false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "b-1", Finalizers: tc.finalizers}}
			r := &Reconciler{}
			if tc.remembered {
				r.orphanCascades.uids.Store(b.UID, true)
			}
			if got := r.deletedWithOrphanCascade(b, tc.plan, tc.objects); got != tc.want {
				t.Errorf("deletedWithOrphanCascade = %v, want %v", got, tc.want)
			}
		})
	}
}
