package it

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
)

// A Bundle that managed objects of a kind whose CRD has since been uninstalled
// goes when deleted after a controller restart (nothing remembers the kind
// then): the kind is gone from the API server, and so are its objects. Its
// teardown used to fail on starting a watch of the kind, and the Bundle stayed
// Terminating. Not parallel: it restarts the shared controller.
func TestTeardownOfAKindNoLongerServed(t *testing.T) {
	ns := env.Namespace(t)
	crd := schemalessCRD("gone.limbo.dev", "Sprocket", "v1")
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	removeCRD := func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("CRD %s is still there (%v)", crd.Name, err)
			}
			return nil
		})
	}
	t.Cleanup(removeCRD)
	sprocket := map[string]any{"apiVersion": "gone.limbo.dev/v1", "kind": "Sprocket", "metadata": map[string]any{"name": "s"}}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error { // served
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("gone.limbo.dev/v1")
		list.SetKind("SprocketList")
		return env.Client.List(context.Background(), list, client.InNamespace(ns))
	})
	b := createBundle(t, ns, "kind-gone", objectResource(t, "s", sprocket))
	waitReady(t, b)

	removeCRD()
	if err := env.RestartController(nil); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
}
