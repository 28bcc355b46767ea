package bundle

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A Bundle whose template and status name a version of its kind that the API
// server no longer serves (a CRD's old version set `served: false`; its objects
// are there, served as v1) is torn down: its Widget, with a delay, is released
// like any other object. Listing the old version found nothing and the
// teardown let the Bundle go with the Widget still controlled by it: the
// garbage collector then deleted it at once, its day's delay ignored.
func TestTeardownOfAVersionNoLongerServed(t *testing.T) {
	widgetV1 := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	for _, statusVersion := range []string{"v1beta1", "v1"} {
		t.Run("status names "+statusVersion, func(t *testing.T) {
			raw, err := json.Marshal(map[string]any{"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": map[string]any{"name": "w",
				"annotations": map[string]any{limbov1alpha1.AnnotationDeletionDelay: "24h"}}})
			if err != nil {
				t.Fatal(err)
			}
			b := deletedBundle([]limbov1alpha1.Resource{{Name: "w", Object: &runtime.RawExtension{Raw: raw}}}, limbov1alpha1.BundleStatus{ObservedGeneration: 1,
				ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "example.com/" + statusVersion, Kind: "Widget"}}})
			w := &unstructured.Unstructured{}
			w.SetGroupVersionKind(widgetV1)
			w.SetNamespace("shop")
			w.SetName("w")
			w.SetLabels(map[string]string{limbov1alpha1.LabelBundle: "web"})
			w.SetAnnotations(map[string]string{limbov1alpha1.AnnotationDeletionDelay: "24h"})
			w.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: ptr.To(true)}})
			f := newTeardownFixtureServing(t, []schema.GroupVersionKind{configMapGVK, widgetV1}, b, nil, w) // v1beta1 not served
			for range 3 {
				f.reconcile(t)
			}
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(widgetV1)
			if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
				t.Fatal(err)
			}
			if owner := metav1.GetControllerOf(cur); owner != nil || !softdelete.Released(cur) {
				t.Errorf("Widget w: controller %v, released %v; want released by the teardown, no controller", owner, softdelete.Released(cur))
			}
		})
	}
}
