package it

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The garbage collector can remove the finalizer orphan without orphaning
// anything: after a kube-apiserver restart its graph may not know the Bundle's
// dependents yet (the soak saw this, seed 455692147). If limbo's watch of the
// Bundle misses the version that carried orphan meanwhile — limbo down, or its
// watch reconnecting — then nothing on the Bundle or its objects tells the
// delete from a background one any more: every object is still controlled by
// the Bundle. Only the Bundle's history does. Here limbo is down, the
// collector's stale graph is played by taking the owner references off before
// the delete, and given back once the collector has let the Bundle go. limbo
// must still delete nothing, disown the objects (or the collector deletes them
// once the Bundle is gone), and let the Bundle go.
func TestOrphanCascadeSkippedByCollector(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	args := []string{"--namespaces", ns, "--leader-elect=false"}
	first := env.ControllerProcess(t, "first", args...)
	b := createBundle(t, ns, "shop",
		objectResource(t, "kept", configMap("kept", map[string]any{"k": "v"}, nil)),
		objectResource(t, "delayed", configMap("delayed", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"})))
	b = waitReady(t, b)
	first.Stop()

	names := []string{"kept", "delayed"}
	for _, name := range names {
		patchObject(t, configMapGVK, ns, name, `{"metadata":{"ownerReferences":null}}`)
	}
	deleteBundle(t, b, metav1.DeletePropagationOrphan)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if cur := getBundle(t, b); slices.Contains(cur.Finalizers, metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("the garbage collector has not removed its finalizer yet: finalizers %v", cur.Finalizers)
		}
		return nil
	})
	for _, name := range names {
		patchObject(t, configMapGVK, ns, name, fmt.Sprintf(
			`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":"Bundle","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
			limbov1alpha1.GroupVersion.String(), b.Name, b.UID))
	}

	env.ControllerProcess(t, "second", args...)
	waitBundleGone(t, b)
	assertLeftBehind(t, ns, names...)
}
