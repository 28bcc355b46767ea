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
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// Two controller processes, started with --watch-label-selector limbo.dev/shard=a
// and !limbo.dev/shard, split the Bundles: each reconciles only its own, puts its
// Bundles' objects in its shard (the label is copied onto them), deletes only
// their orphans, and its reaper deletes only what its Bundles released.
func TestShardsSplitBundles(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	shardArgs := func(selector string) []string {
		return []string{"--namespaces", ns, "--leader-elect=false", "--watch-label-selector", selector}
	}
	resources := func(prefix string) (keep, doomed limbov1alpha1.Resource) {
		return objectResource(t, "keep", configMap(prefix+"-keep", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "5s"})),
			objectResource(t, "doomed", configMap(prefix+"-doomed", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"}))
	}
	keepA, doomedA := resources("a")
	keepRest, doomedRest := resources("rest")
	bundleA := createLabelledBundle(t, ns, "a", map[string]string{shardLabel: "a"}, keepA, doomedA)
	bundleRest := createLabelledBundle(t, ns, "rest", nil, keepRest, doomedRest)

	shardA := env.ControllerProcess(t, "shard-a", shardArgs(shardLabel+"=a")...)
	waitReady(t, bundleA)
	// The rest's Bundle waits for its own shard. (Its finalizer says nothing: the
	// admission policy set it at create.)
	testenv.Consistently(t, 3*time.Second, func() error {
		if cur := getBundle(t, bundleRest); cur.Status.ObservedGeneration != 0 || len(cur.Status.Conditions) != 0 {
			return fmt.Errorf("Bundle rest was reconciled by shard a: observedGeneration %d, conditions %+v", cur.Status.ObservedGeneration, cur.Status.Conditions)
		}
		return nil
	})
	shardRest := env.ControllerProcess(t, "shard-rest", shardArgs("!"+shardLabel)...)
	waitReady(t, bundleRest)

	for name, want := range map[string]string{"a-keep": "a", "a-doomed": "a", "rest-keep": "", "rest-doomed": ""} {
		if got := getObject(t, configMapGVK, ns, name).GetLabels()[shardLabel]; got != want {
			t.Errorf("ConfigMap %s: label %s = %q, want %q (its Bundle's)", name, shardLabel, got, want)
		}
	}

	// Orphans: each shard deletes its own.
	updateBundle(t, bundleA, keepA)
	updateBundle(t, bundleRest, keepRest)
	waitGone(t, configMapGVK, ns, "a-doomed")
	waitGone(t, configMapGVK, ns, "rest-doomed")
	wantDeletions(t, map[string]*controllerprocess.Process{"a": shardA, "rest": shardRest}, map[string]float64{"a": 1, "rest": 1})

	// The reaper: Bundle a's teardown releases a-keep (it has a delay) to shard a's
	// reaper; the other reaper leaves it alone.
	if err := env.Client.Delete(context.Background(), bundleA); err != nil {
		t.Fatalf("delete Bundle a: %v", err)
	}
	released := waitObject(t, configMapGVK, ns, "a-keep", func(u *unstructured.Unstructured) error {
		if metav1.GetControllerOf(u) != nil {
			return fmt.Errorf("a-keep is still controlled by %s", metav1.GetControllerOf(u).Name)
		}
		return nil
	})
	if released.GetLabels()[shardLabel] != "a" {
		t.Errorf("released a-keep lost its shard label: %v", released.GetLabels())
	}
	waitGone(t, configMapGVK, ns, "a-keep")
	wantDeletions(t, map[string]*controllerprocess.Process{"a": shardA, "rest": shardRest}, map[string]float64{"a": 2, "rest": 1})
	if getObject(t, configMapGVK, ns, "rest-keep") == nil {
		t.Errorf("rest-keep was deleted")
	}

	// Moving Bundle rest to shard a (install.md "Sharding") hands it over: shard a
	// re-applies its objects with its label, for good (the shard it left does not
	// put its own back), and deletes its orphans from then on.
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"a"}}}`, shardLabel))
	if err := env.Client.Patch(context.Background(), getBundle(t, bundleRest), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("move Bundle rest to shard a: %v", err)
	}
	inShardA := func() error {
		if got := getObject(t, configMapGVK, ns, "rest-keep").GetLabels()[shardLabel]; got != "a" {
			return fmt.Errorf("rest-keep: label %s = %q, want a", shardLabel, got)
		}
		return nil
	}
	testenv.Eventually(t, testenv.DefaultTimeout, inShardA)
	testenv.Consistently(t, 2*time.Second, inShardA)
	extra := objectResource(t, "extra", configMap("rest-extra", map[string]any{"a": "b"}, nil))
	updateBundle(t, bundleRest, keepRest, extra)
	waitObject(t, configMapGVK, ns, "rest-extra", func(u *unstructured.Unstructured) error {
		if got := u.GetLabels()[shardLabel]; got != "a" {
			return fmt.Errorf("rest-extra: label %s = %q, want a", shardLabel, got)
		}
		return nil
	})
	waitReady(t, bundleRest)
	updateBundle(t, bundleRest, keepRest)
	waitGone(t, configMapGVK, ns, "rest-extra")
	wantDeletions(t, map[string]*controllerprocess.Process{"a": shardA, "rest": shardRest}, map[string]float64{"a": 3, "rest": 1})
}

// wantDeletions checks each process's count of deletions it made.
func wantDeletions(t testing.TB, procs map[string]*controllerprocess.Process, want map[string]float64) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		for name, p := range procs {
			if got := metricsOf(t, p).Sum("limbo_deletions_total", map[string]string{"result": "deleted"}); got != want[name] {
				return fmt.Errorf("shard %s deleted %v objects, want %v", name, got, want[name])
			}
		}
		return nil
	})
}
