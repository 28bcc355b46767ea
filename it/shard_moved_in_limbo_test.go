package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object a Bundle left in limbo keeps its shard's label when the Bundle
// moves to another shard, so the new shard's cache does not show it. The new
// shard still finds it before its kind leaves the status, counts it in
// pendingDeletions, moves it into its shard, and a teardown releases it. The kind used to leave status.managedKinds with the
// first pass in the new shard (the object was the last of its kind), the
// teardown then found nothing of it, let the Bundle go with the object still
// controlled, and the garbage collector deleted it at once: its hour ignored.
func TestObjectInLimboOfABundleMovedToAnotherShard(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	const shardLabel = "limbo.dev/shard"
	for name, selector := range map[string]string{"shard-a": shardLabel + "=a", "shard-rest": "!" + shardLabel} {
		env.ControllerProcess(t, name, "--namespaces", ns, "--leader-elect=false", "--watch-label-selector", selector)
	}
	keep := objectResource(t, "keep", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "keep"}, "data": map[string]any{"k": "dg=="}})
	old := objectResource(t, "old", configMap("old", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := createBundle(t, ns, "web", keep, old)
	waitReady(t, b)
	updateBundle(t, b, keep)
	waitInLimbo(t, configMapGVK, ns, "old")

	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"a"}}}`, shardLabel))
	if err := env.Client.Patch(context.Background(), getBundle(t, b), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("move the Bundle to shard a: %v", err)
	}
	waitObject(t, secretGVK, ns, "keep", func(u *unstructured.Unstructured) error {
		if got := u.GetLabels()[shardLabel]; got != "a" {
			return fmt.Errorf("keep: label %s = %q, want a (shard a's pass)", shardLabel, got)
		}
		return nil
	})
	stillListed := func() error {
		cur := getBundle(t, b)
		if cur.Status.PendingDeletionCount != 1 || len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "old" {
			return fmt.Errorf("pendingDeletions = %+v (count %d), want old", cur.Status.PendingDeletions, cur.Status.PendingDeletionCount)
		}
		for _, k := range cur.Status.ManagedKinds {
			if k.Kind == "ConfigMap" {
				return nil
			}
		}
		return fmt.Errorf("managedKinds = %+v, want ConfigMap among them", cur.Status.ManagedKinds)
	}
	testenv.Consistently(t, 3*time.Second, stillListed)
	// Moved into shard a: its passes see it in their cache, not by asking the
	// API server every time.
	waitObject(t, configMapGVK, ns, "old", func(u *unstructured.Unstructured) error {
		if got := u.GetLabels()[shardLabel]; got != "a" {
			return fmt.Errorf("old: label %s = %q, want a", shardLabel, got)
		}
		return nil
	})

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitObject(t, configMapGVK, ns, "old", func(u *unstructured.Unstructured) error {
		if owner := metav1.GetControllerOf(u); owner != nil {
			return fmt.Errorf("old is still controlled by %s %s", owner.Kind, owner.Name)
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if getObject(t, configMapGVK, ns, "old") == nil {
			return fmt.Errorf("old was deleted, an hour early")
		}
		return nil
	})
}
