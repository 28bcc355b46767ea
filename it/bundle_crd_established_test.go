package it

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle created with the CRD of a kind it holds (Helm, Flux and `kubectl
// apply -f dir/` create both together) may be passed before the kind is
// served: UnknownKind, a spec error. Once the CRD is established the Bundle is
// passed again and gets Ready. Before, nothing passed it again until the
// resync period (30 min) ended.
func TestBundleOfAKindServedLater(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	gizmo := map[string]any{"apiVersion": "later.limbo.dev/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"}}
	b := createBundle(t, ns, "later", objectResource(t, "gizmo", gizmo))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "gizmo", limbov1alpha1.ResourceError, limbov1alpha1.ReasonUnknownKind)
	})

	crd := schemalessCRD("later.limbo.dev", "Gizmo", "v1")
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
	})
	waitReady(t, b)
	gizmoGVK := schema.GroupVersionKind{Group: "later.limbo.dev", Version: "v1", Kind: "Gizmo"}
	if err := isControlledBy(getObject(t, gizmoGVK, ns, "g"), getBundle(t, b)); err != nil {
		t.Error(err)
	}

	// A version the CRD does not serve yet is unknown too; once the CRD serves
	// it, the Bundles naming the kind are passed again (an update of a CRD
	// established long before).
	gizmoV2 := map[string]any{"apiVersion": "later.limbo.dev/v2", "kind": "Gizmo", "metadata": map[string]any{"name": "g2"}}
	b2 := createBundle(t, ns, "later-v2", objectResource(t, "gizmo", gizmoV2))
	waitBundle(t, b2, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "gizmo", limbov1alpha1.ResourceError, limbov1alpha1.ReasonUnknownKind)
	})
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions = append(crd.Spec.Versions, schemalessCRD("later.limbo.dev", "Gizmo", "v2").Spec.Versions[0])
	crd.Spec.Versions[1].Storage = false
	if err := env.Client.Update(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	waitReady(t, b2)

	// The Bundles go before their kind does.
	for _, bundle := range []*limbov1alpha1.Bundle{b, b2} {
		deleteBundle(t, bundle, metav1.DeletePropagationBackground)
		waitBundleGone(t, bundle)
	}
	waitGone(t, gizmoGVK, ns, "g")
}
