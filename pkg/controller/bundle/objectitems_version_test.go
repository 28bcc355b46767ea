package bundle

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// servingDiscovery is a discovery that serves its kinds at their versions:
// namespaced ones, and clusterScoped ones.
type servingDiscovery struct {
	namespaced, clusterScoped []schema.GroupVersionKind
}

func (d servingDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	var lists []*metav1.APIResourceList
	add := func(kinds []schema.GroupVersionKind, namespaced bool) {
		for _, gvk := range kinds {
			lists = append(lists, &metav1.APIResourceList{GroupVersion: gvk.GroupVersion().String(), APIResources: []metav1.APIResource{
				{Name: strings.ToLower(gvk.Kind) + "s", Kind: gvk.Kind, Namespaced: namespaced, Verbs: metav1.Verbs{"list", "watch", "delete", "patch"}},
			}})
		}
	}
	add(d.namespaced, true)
	add(d.clusterScoped, false)
	return lists, nil
}

// The object items in limbo of a plugin resource the Bundle no longer has (a
// pass), or of a Bundle torn down, are cancelled even when their kind's listing
// at the version the status recorded finds nothing: that version is no longer
// served (the CRD serves v2 only), or the API server answered 404 for a moment
// for a kind discovery still serves. Either was taken for "the kind is gone":
// the items kept their stamp, their entries left the status (which alone says
// where to look), and a resource of that name added again found them due at
// once; a teardown let its Bundle go with them still marked.
func TestObjectItemsOfAVersionNotFoundAreCancelled(t *testing.T) {
	for _, scope := range []struct {
		kind      string
		namespace string // "" for a cluster-scoped kind, as csi-baremetal's Drive
	}{{"Volume", "shop"}, {"Drive", ""}} {
		volumeV1 := schema.GroupVersionKind{Group: "csi-baremetal.dell.com", Version: "v1", Kind: scope.kind}
		volumeV2 := schema.GroupVersionKind{Group: "csi-baremetal.dell.com", Version: "v2", Kind: scope.kind}
		served := servingDiscovery{namespaced: []schema.GroupVersionKind{configMapGVK, volumeV2}}
		if scope.namespace == "" {
			served = servingDiscovery{namespaced: []schema.GroupVersionKind{configMapGVK}, clusterScoped: []schema.GroupVersionKind{volumeV2}}
		}
		for _, tc := range []struct {
			name     string
			recorded schema.GroupVersionKind // the version pendingDeletions names
			notFound bool                    // the first pass's listing in limbo answers 404
			teardown bool
		}{
			{"pass, recorded version no longer served", volumeV1, false, false},
			{"pass, transient 404", volumeV2, true, false},
			{"teardown, recorded version no longer served", volumeV1, false, true},
			{"teardown, transient 404", volumeV2, true, true},
		} {
			t.Run(scope.kind+", "+tc.name, func(t *testing.T) {
				status := limbov1alpha1.BundleStatus{ObservedGeneration: 1}
				setPending(&status, []limbov1alpha1.PendingDeletion{
					{APIVersion: tc.recorded.GroupVersion().String(), Kind: scope.kind, Namespace: scope.namespace, Name: "vol", Resource: "node-removal"},
				})
				// The pass's Bundle no longer has its node-removal resource.
				b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
					Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}}, Status: status}
				if tc.teardown {
					b = deletedBundle(nil, status)
				}
				vol := &unstructured.Unstructured{}
				vol.SetGroupVersionKind(volumeV2)
				vol.SetNamespace(scope.namespace)
				vol.SetName("vol")
				vol.SetLabels(map[string]string{limbov1alpha1.LabelPendingDeletion: "true"})
				vol.SetAnnotations(map[string]string{limbov1alpha1.AnnotationPluginResource: "shop/web/node-removal",
					limbov1alpha1.AnnotationDeletionDelay: "30m", limbov1alpha1.AnnotationDeletionTimestamp: "2020-01-01T00:00:00Z"})
				f := newTeardownFixtureServing(t, []schema.GroupVersionKind{configMapGVK, volumeV2}, b, nil, vol) // v1 not served
				f.r.Discovery = served
				// The fake client lists a kind its scheme does not know as the type
				// of its first list: a first list of metadata would then fail on the
				// Volume stored unstructured.
				f.c.Scheme().AddKnownTypeWithName(volumeV2.GroupVersion().WithKind(scope.kind+"List"), &unstructured.UnstructuredList{})
				notFound := tc.notFound
				f.r.APIReader = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
					List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
						lo := (&client.ListOptions{}).ApplyOptions(opts)
						inLimbo := lo.LabelSelector != nil && strings.Contains(lo.LabelSelector.String(), limbov1alpha1.LabelPendingDeletion)
						if notFound && inLimbo && list.GetObjectKind().GroupVersionKind().Kind == scope.kind+"List" {
							return apierrors.NewNotFound(schema.GroupResource{Group: volumeV2.Group, Resource: strings.ToLower(scope.kind) + "s"}, "")
						}
						return c.List(ctx, list, opts...)
					},
				})

				_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
				if tc.notFound {
					// Not the kind's end: the items are looked for again.
					if tc.teardown {
						var cur limbov1alpha1.Bundle
						if err == nil || f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur) != nil {
							t.Fatalf("the teardown let the Bundle go (Reconcile error %v) on a 404 for a kind discovery serves", err)
						}
					} else {
						listed := false
						for _, pd := range f.status(t).PendingDeletions {
							listed = listed || pd.Name == "vol"
						}
						if err != nil || !listed {
							t.Fatalf("after a pass answered 404: Reconcile error %v, vol listed %v; want no error and vol still listed (looked for again)", err, listed)
						}
					}
					notFound = false
					_, err = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
				}
				if err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
				cur := &unstructured.Unstructured{}
				cur.SetGroupVersionKind(volumeV2)
				if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(vol), cur); err != nil {
					t.Fatalf("%s vol: %v (deleted?)", scope.kind, err)
				}
				if cur.GetLabels()[limbov1alpha1.LabelPendingDeletion] == "true" || cur.GetAnnotations()[limbov1alpha1.AnnotationPluginResource] != "" {
					t.Errorf("%s vol still in limbo (labels %v, annotations %v): its cancel was lost", scope.kind, cur.GetLabels(), cur.GetAnnotations())
				}
				if tc.teardown {
					var gone limbov1alpha1.Bundle
					if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &gone); !apierrors.IsNotFound(err) {
						t.Errorf("Bundle still there (finalizers %v, err %v) once its items were cancelled, want gone", gone.Finalizers, err)
					}
				}
			})
		}
	}
}
