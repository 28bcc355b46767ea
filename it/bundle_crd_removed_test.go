package it

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A CRD uninstalled under a Bundle that holds its kind takes the objects with
// it; the Bundle says UnknownKind, as for a kind never installed, and gets Ready
// again once the CRD is back — every time. Before, the Bundle said ApplyFailed
// ("the server could not find the requested resource") the first time, and the
// second time stayed Ready for an object that was gone: the kind's informer was
// still retrying its failed watch and never saw the object come and go.
func TestBundleOfAKindUninstalled(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	doohickeyGVK := schema.GroupVersionKind{Group: "removed.limbo.dev", Version: "v1", Kind: "Doohickey"}
	doohickey := map[string]any{"apiVersion": "removed.limbo.dev/v1", "kind": "Doohickey", "metadata": map[string]any{"name": "d"}}
	installCRD(t, schemalessCRD(doohickeyGVK.Group, doohickeyGVK.Kind, doohickeyGVK.Version))
	b := createBundle(t, ns, "removed", objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil)), objectResource(t, "doohickey", doohickey))
	t.Cleanup(func() { deleteBundle(t, b, metav1.DeletePropagationBackground) })

	for round := 1; round <= 2; round++ {
		waitReady(t, b)
		if getObject(t, doohickeyGVK, ns, "d") == nil {
			t.Fatalf("round %d: the Doohickey is missing while the Bundle is Ready", round)
		}
		uninstallCRD(t, schemalessCRD(doohickeyGVK.Group, doohickeyGVK.Kind, doohickeyGVK.Version))
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if err := resourceIs(cur, "doohickey", limbov1alpha1.ResourceError, limbov1alpha1.ReasonUnknownKind); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			return nil
		})
		installCRD(t, schemalessCRD(doohickeyGVK.Group, doohickeyGVK.Kind, doohickeyGVK.Version))
	}
	waitReady(t, b)
}

// installCRD creates crd and waits until it is established; the test's end
// uninstalls it.
func installCRD(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
	})
	waitEstablished(t, crd)
}

// waitEstablished waits until crd is established.
func waitEstablished(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), cur); err != nil {
			return err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not established yet", crd.Name)
	})
}

// uninstallCRD deletes crd and waits until it is gone (with its objects).
func uninstallCRD(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("CRD %s still there (%v)", crd.Name, err)
	})
}
