package it

import (
	"context"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

var pvcGVK = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}

// A claim of a StorageClass that binds on first use (volumeBindingMode
// WaitForFirstConsumer) stays Pending until a Pod that uses it is scheduled:
// waiting for it to bind before creating the Deployment that uses it would wait
// for ever. Such a claim is Ready (its message says it waits for its first
// consumer), so what depends on it is created; a claim of a class that binds at
// once stays InProgress until it is Bound.
func TestClaimWaitingForFirstConsumerIsReady(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	storageClass := func(name string, mode storagev1.VolumeBindingMode) string {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			Provisioner: "example.com/no-such-provisioner", VolumeBindingMode: ptr.To(mode)}
		if err := env.Client.Create(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sc) })
		return sc.Name
	}
	claim := func(name, class string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"storageClassName": class, "accessModes": []any{"ReadWriteOnce"},
				"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}
	}
	after := func(resource string) limbov1alpha1.Reference { return limbov1alpha1.Reference{Resource: resource} }

	lazy := createBundle(t, ns, "lazy",
		objectResource(t, "data", claim("data", storageClass("lazy", storagev1.VolumeBindingWaitForFirstConsumer))),
		objectResource(t, "app", configMap("app", map[string]any{"uses": "data"}, nil), after("data")),
	)
	waitBundle(t, lazy, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, "data", limbov1alpha1.ResourceReady, "",
			`Pending until a Pod that uses it is scheduled: StorageClass "`+ns+`-lazy" binds on first use (volumeBindingMode WaitForFirstConsumer)`); err != nil {
			return err
		}
		return conditionIs(cur, limbov1alpha1.ConditionReady, metav1.ConditionTrue, limbov1alpha1.ReasonReady)
	})
	if getObject(t, configMapGVK, ns, "app") == nil {
		t.Error("app was not created after the claim that waits for its first consumer")
	}
	if phase := stringField(getObject(t, pvcGVK, ns, "data"), "status", "phase"); phase != "Pending" {
		t.Errorf("claim data is %q, want it still Pending (no Pod uses it)", phase)
	}

	eager := createBundle(t, ns, "eager",
		objectResource(t, "data", claim("eager-data", storageClass("eager", storagev1.VolumeBindingImmediate))),
		objectResource(t, "app", configMap("eager-app", map[string]any{"uses": "eager-data"}, nil), after("data")),
	)
	waitBundle(t, eager, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "data", limbov1alpha1.ResourceInProgress, ""); err != nil {
			return err
		}
		return resourceIs(cur, "app", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
}
