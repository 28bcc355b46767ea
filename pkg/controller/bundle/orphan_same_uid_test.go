package bundle

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An API server may serve one stored kind under two groups (OpenShift serves
// rbac.authorization.k8s.io's RoleBindings as authorization.openshift.io's).
// A template moved from one group to the other: the pass applied the object
// through the new group, then listed the old one — still in the status, still
// watched — found the same object under a key no template declares, and
// deleted it; the next pass made it again, and so on. The object a resource
// holds, by UID, is never an orphan, whichever group lists it.
func TestAnObjectOfTwoGroupsIsNoOrphan(t *testing.T) {
	legacy := schema.GroupVersionKind{Group: "legacy.example.com", Version: "v1", Kind: "ConfigMap"}
	b := livingBundle(cmResource(t, "x", nil))
	b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "x", State: limbov1alpha1.ResourceReady,
		Object: &limbov1alpha1.ObjectReference{APIVersion: legacy.GroupVersion().String(), Kind: "ConfigMap", Namespace: "shop", Name: "x"}}}
	x := bundleConfigMap("x", nil)
	x.UID = types.UID("x-uid")
	// The same object, as the old group lists it.
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(legacy)
	old.SetNamespace("shop")
	old.SetName("x")
	old.SetUID(x.UID)
	old.SetLabels(x.Labels)
	old.SetOwnerReferences(x.OwnerReferences)
	f := newTeardownFixtureServing(t, []schema.GroupVersionKind{configMapGVK, legacy}, b, nil, x, old)
	f.c.Scheme().AddKnownTypeWithName(legacy.GroupVersion().WithKind("ConfigMapList"), &unstructured.UnstructuredList{})
	f.reconcile(t)
	f.reconcile(t)
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(legacy)
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: "x"}, cur); err != nil {
		t.Errorf("the object as the old group lists it: %v (deleted as an orphan?)", err)
	}
	if live := f.liveConfigMap(t, "x"); live == nil {
		t.Error("ConfigMap x deleted")
	}
	for _, pd := range f.status(t).PendingDeletions {
		t.Errorf("pendingDeletions lists %s %s: the object its resource holds", pd.Kind, pd.Name)
	}
}
