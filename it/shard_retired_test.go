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
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Retiring a shard (install.md "Retiring a shard"): an object a deleted Bundle of
// shard a released to limbo keeps shard a's label, so only shard a's reaper
// deletes it; with shard a's controller stopped, no other controller selects it
// and it stays for good. Relabelled into a shard that stays (here the rest: the
// label removed), that shard's reaper deletes it at its deadline.
func TestReleasedObjectOfARetiredShardRelabelled(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	shardA := env.ControllerProcess(t, "shard-a", "--namespaces", ns, "--leader-elect=false", "--watch-label-selector", shardLabel+"=a")
	shardRest := env.ControllerProcess(t, "shard-rest", "--namespaces", ns, "--leader-elect=false", "--watch-label-selector", "!"+shardLabel)
	// A Bundle of the rest, so that its controller watches ConfigMaps.
	waitReady(t, createBundle(t, ns, "rest", objectResource(t, "keep", configMap("rest-keep", map[string]any{"a": "b"}, nil))))
	x := objectResource(t, "x", configMap("x", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "15s"}))
	b := waitReady(t, createLabelledBundle(t, ns, "web", map[string]string{shardLabel: "a"}, x))
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	released := waitObject(t, configMapGVK, ns, "x", func(u *unstructured.Unstructured) error {
		// Released: marked, and then owned by nobody (a release's second write).
		if !softdelete.Released(u) {
			return fmt.Errorf("x is not released yet: annotations %v, owners %v", u.GetAnnotations(), u.GetOwnerReferences())
		}
		if u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
			return fmt.Errorf("x is not stamped yet")
		}
		return nil
	})
	shardA.Stop() // retired, x still in limbo
	stamp, err := time.Parse(time.RFC3339, released.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatalf("x's stamp: %v", err)
	}
	// Past its deadline nothing deletes it: the rest's reaper does not select it.
	testenv.Consistently(t, time.Until(stamp.Add(20*time.Second)), func() error {
		if getObject(t, configMapGVK, ns, "x") == nil {
			return fmt.Errorf("x was deleted with its shard stopped and its label unchanged")
		}
		return nil
	})

	// kubectl label configmap x limbo.dev/shard-
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, shardLabel))
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		return env.Client.Patch(context.Background(), getObject(t, configMapGVK, ns, "x"), client.RawPatch(types.MergePatchType, patch))
	})
	waitGone(t, configMapGVK, ns, "x")
	wantDeletions(t, map[string]*controllerprocess.Process{"rest": shardRest}, map[string]float64{"rest": 1})
}
