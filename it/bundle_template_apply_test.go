package it

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
)

// A template is one field to server-side apply: the manager that applied it owns it
// whole, so another manager's apply that changes it conflicts instead of quietly
// co-owning some of its fields (docs/design-decisions.md, "A template is atomic").
func TestTemplateIsAtomicToServerSideApply(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	bundle := func(data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "limbo.dev/v1alpha1",
			"kind":       "Bundle",
			"metadata":   map[string]any{"name": "atomic", "namespace": ns},
			"spec": map[string]any{"resources": []any{map[string]any{
				"name":   "config",
				"object": configMap("atomic-config", data, nil),
			}}},
		}}
	}
	if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(bundle(map[string]any{"owner": "gitops"})), client.FieldOwner("gitops")); err != nil {
		t.Fatalf("apply as gitops: %v", err)
	}

	// With per-field tracking this apply would succeed: it sets the template's
	// apiVersion, kind and name to the values gitops set (shared ownership) and
	// adds data.editor, a field nobody owns.
	err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(bundle(map[string]any{"owner": "gitops", "editor": "was here"})), client.FieldOwner("editor"))
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply as editor: want a conflict, got %v", err)
	}
	if want := `.spec.resources[name="config"].object`; !strings.Contains(err.Error(), want) {
		t.Errorf("conflict %q does not name %s", err, want)
	}

	// The owner's own apply replaces the template whole.
	if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(bundle(map[string]any{"owner": "gitops", "version": "2"})), client.FieldOwner("gitops")); err != nil {
		t.Fatalf("second apply as gitops: %v", err)
	}
}
