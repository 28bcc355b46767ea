package it

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A PUT of a Bundle — `kubectl replace`, `helm upgrade --force`, Argo CD's
// Replace=true — sends the manifest, which has no finalizers. On a Bundle
// being torn down it took limbo.dev/teardown away mid-teardown: the API server
// deleted the Bundle at once, and the garbage collector every object it still
// controlled, the delayed ones of later waves too. The admission policy puts
// back a teardown finalizer that a write other than limbo's removes — also one
// carrying a copy's limbo.dev/tornDown (a manifest taken with kubectl get -o
// yaml from a Bundle whose teardown had ended), which names another UID.
func TestTeardownFinalizerKeptThroughPut(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "put",
		objectResource(t, "app", configMap("app", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "db"}),
		objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})))
	waitReady(t, b)
	release := holdConfigMap(t, ns, "app")
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := getBundle(t, b)
		if cur == nil {
			return fmt.Errorf("the Bundle is gone")
		}
		return conditionIs(cur, "ContentRemaining", metav1.ConditionTrue, "SomeResourcesRemain")
	})

	// The manifest again, as a PUT: no finalizers, and the annotations it was
	// created with — a copy's limbo.dev/tornDown, taken from a Bundle whose
	// teardown had ended, which names that Bundle's UID.
	// A manifest has no uid (kubectl replace -f, a Helm render; kubectl takes
	// the live resourceVersion for a body without one): the API server's
	// mutating admission sees none either.
	var manifest *unstructured.Unstructured
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := getBundle(t, b)
		manifest = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": limbov1alpha1.GroupVersion.String(), "kind": "Bundle",
			"metadata": map[string]any{"namespace": ns, "name": live.Name,
				"annotations": map[string]any{limbov1alpha1.AnnotationTornDown: "uid-of-the-bundle-it-was-copied-from"}},
			"spec": func() map[string]any {
				spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&live.Spec)
				if err != nil {
					t.Fatal(err)
				}
				return spec
			}(),
		}}
		manifest.SetResourceVersion(live.ResourceVersion)
		return env.Client.Update(context.Background(), manifest)
	}); err != nil {
		t.Fatalf("PUT the Bundle: %v", err)
	}
	cur := &limbov1alpha1.Bundle{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(manifest.Object, cur); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Errorf("the PUT's answer has finalizers %v, want %s kept", cur.Finalizers, limbov1alpha1.FinalizerTeardown)
	}
	testenv.Consistently(t, 3*time.Second, func() error {
		if getBundle(t, b) == nil {
			return fmt.Errorf("the Bundle is gone mid-teardown")
		}
		if db := getObject(t, configMapGVK, ns, "db"); db == nil || db.GetDeletionTimestamp() != nil {
			return fmt.Errorf("ConfigMap db, delayed 1h, is deleted")
		}
		return nil
	})

	// The teardown goes on: db is released, with its countdown.
	release()
	waitBundleGone(t, b)
	waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		if _, released := u.GetAnnotations()[limbov1alpha1.AnnotationReleased]; !released || u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
			return fmt.Errorf("ConfigMap db not released with a stamp: %v", u.GetAnnotations())
		}
		return nil
	})
}
