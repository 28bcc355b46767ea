package bundle

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A pass of a spec with an error keeps, in the status it writes, the object
// each resource's status recorded: a teardown that cannot name a resource's
// object from its template (a typo in its apiVersion) finds it there and
// deletes it in its resource's wave. The status of the spec error recorded
// none, and the object went in the first wave, before what depends on it.
func TestInvalidSpecKeepsTheRecordedObjects(t *testing.T) {
	resources := []limbov1alpha1.Resource{
		{Name: "db", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1/","kind":"ConfigMap","metadata":{"name":"db"}}`)}},
		{Name: "app", References: []limbov1alpha1.Reference{{Resource: "db"}}, Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"}}`)}},
	}
	recorded := map[string]*limbov1alpha1.ObjectReference{
		"db":  {APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "db", UID: "db-uid"},
		"app": {APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "app", UID: "app-uid"},
	}
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{Resources: []limbov1alpha1.ResourceStatus{
		{Name: "db", State: limbov1alpha1.ResourceReady, Object: recorded["db"]},
		{Name: "app", State: limbov1alpha1.ResourceReady, Object: recorded["app"]},
	}})
	b.DeletionTimestamp, b.Finalizers = nil, []string{limbov1alpha1.FinalizerTeardown}
	f := newTeardownFixture(t, b, nil)
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil {
		t.Fatal("Reconcile of an invalid spec: no error")
	}
	var got limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Resources) != 2 {
		t.Fatalf("status.resources = %+v, want db and app", got.Status.Resources)
	}
	for _, st := range got.Status.Resources {
		if st.Reason != limbov1alpha1.ReasonInvalidSpec && st.State != limbov1alpha1.ResourceError {
			t.Errorf("resource %s: %s/%s, want the spec error's status", st.Name, st.State, st.Reason)
		}
		if !equality.Semantic.DeepEqual(st.Object, recorded[st.Name]) {
			t.Errorf("resource %s: object %+v, want the one recorded, %+v", st.Name, st.Object, recorded[st.Name])
		}
	}
	if keys := recordedKeys(&got); keys["db"] == "" {
		t.Errorf("recordedKeys = %v: db's object is not found again", keys)
	}
}
