package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Objects a Bundle left in limbo keep their shard's label when the Bundle moves
// to another shard, so the new shard's cache does not show them: "old", of a
// kind the Bundle still has, and "old-secret", of a kind it no longer has. The
// new shard still finds both, keeps them in pendingDeletions and their kinds in
// managedKinds, moves them into its shard, and a teardown releases them. The
// new shard used to list neither (nor delete them at their deadlines), dropped
// the Secret kind from the status with its first pass, and a teardown then let
// the Bundle go with old-secret still controlled: the garbage collector deleted
// it at once, its hour ignored.
func TestObjectsInLimboOfABundleMovedToAnotherShard(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	startShards(t, ns)
	hour := map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	old := objectResource(t, "old", configMap("old", map[string]any{"a": "b"}, hour))
	oldSecret := objectResource(t, "old-secret", map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "old-secret", "annotations": hour}, "data": map[string]any{"k": "dg=="}})
	b := createBundle(t, ns, "web", keep, old, oldSecret)
	waitReady(t, b)
	updateBundle(t, b, keep)
	inLimbo := []struct {
		gvk  schema.GroupVersionKind
		name string
	}{{configMapGVK, "old"}, {secretGVK, "old-secret"}}
	for _, o := range inLimbo {
		waitInLimbo(t, o.gvk, ns, o.name)
	}

	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"a"}}}`, shardLabel))
	if err := env.Client.Patch(context.Background(), getBundle(t, b), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("move the Bundle to shard a: %v", err)
	}
	// Moved into shard a by its first pass: from then on its passes see them in
	// their cache, not by asking the API server every time.
	for _, o := range inLimbo {
		waitObject(t, o.gvk, ns, o.name, func(u *unstructured.Unstructured) error {
			if got := u.GetLabels()[shardLabel]; got != "a" {
				return fmt.Errorf("%s: label %s = %q, want a", o.name, shardLabel, got)
			}
			return nil
		})
	}
	testenv.Consistently(t, 3*time.Second, func() error {
		cur := getBundle(t, b)
		if cur.Status.PendingDeletionCount != 2 || len(cur.Status.PendingDeletions) != 2 {
			return fmt.Errorf("pendingDeletions = %+v (count %d), want old and old-secret", cur.Status.PendingDeletions, cur.Status.PendingDeletionCount)
		}
		kinds := map[string]bool{}
		for _, k := range cur.Status.ManagedKinds {
			kinds[k.Kind] = true
		}
		if !kinds["ConfigMap"] || !kinds["Secret"] {
			return fmt.Errorf("managedKinds = %+v, want ConfigMap and Secret among them", cur.Status.ManagedKinds)
		}
		return nil
	})

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	for _, o := range inLimbo {
		waitObject(t, o.gvk, ns, o.name, func(u *unstructured.Unstructured) error {
			if owner := metav1.GetControllerOf(u); owner != nil {
				return fmt.Errorf("%s is still controlled by %s %s", o.name, owner.Kind, owner.Name)
			}
			return nil
		})
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, o := range inLimbo {
			if getObject(t, o.gvk, ns, o.name) == nil {
				return fmt.Errorf("%s was deleted, an hour early", o.name)
			}
		}
		return nil
	})
}
