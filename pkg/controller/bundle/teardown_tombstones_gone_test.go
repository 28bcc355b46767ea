package bundle

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/uninstall"
)

// The last listing of a Bundle's Tombstones, before it goes, answered 404:
// the Tombstones' CRD is gone (limbo uninstalled, that CRD deleted before the
// teardowns end) and so are they — or the API server has just started and
// does not serve the kind yet, and the Tombstones are there. Only the CRD,
// read from the API server, tells: gone or being deleted, the Bundle goes;
// there, the teardown fails and is retried.
func TestTeardownTombstoneListNotFound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		crd      string // "present", "deleting", "gone"
		wantGone bool
	}{
		{name: "a moment's 404: retried", crd: "present"},
		{name: "the CRD being deleted", crd: "deleting", wantGone: true},
		{name: "the CRD gone", crd: "gone", wantGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTeardownFixture(t, deletedBundle(nil, limbov1alpha1.BundleStatus{ObservedGeneration: 1}), nil)
			inner := f.c.(client.WithWatch)
			f.r.APIReader = interceptor.NewClient(inner, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*limbov1alpha1.TombstoneList); ok {
						return apierrors.NewNotFound(schema.GroupResource{Group: "limbo.dev", Resource: "tombstones"}, "")
					}
					return c.List(ctx, list, opts...)
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					meta, ok := obj.(*metav1.PartialObjectMetadata)
					if !ok || meta.GroupVersionKind().Kind != "CustomResourceDefinition" {
						return c.Get(ctx, key, obj, opts...)
					}
					if key.Name != uninstall.TombstonesCRD || tc.crd == "gone" {
						return apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, key.Name)
					}
					meta.Name = key.Name
					if tc.crd == "deleting" {
						meta.DeletionTimestamp = &metav1.Time{Time: f.r.Clock.Now()}
					}
					return nil
				},
			})
			_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)})
			var b limbov1alpha1.Bundle
			gone := apierrors.IsNotFound(f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b))
			if gone != tc.wantGone {
				t.Errorf("the Bundle gone = %v (finalizers %v, Reconcile: %v), want %v", gone, b.Finalizers, err, tc.wantGone)
			}
			if (err != nil) == tc.wantGone {
				t.Errorf("Reconcile: %v", err)
			}
		})
	}
}
