package it

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

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

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.later.limbo.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "later.limbo.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
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

	// The Bundle goes before its kind does.
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	waitGone(t, gizmoGVK, ns, "g")
}
