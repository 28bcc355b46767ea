package it

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The garbage collector can finish a --cascade=orphan delete before limbo first
// looks at the deleted Bundle (it removes the finalizer orphan once it has
// orphaned the dependents it knows), and it can miss a dependent created within
// its informer lag. Here limbo is down while that happens, so it cannot have
// seen the finalizer on a watch event, and the collector's miss is played by
// giving one object its owner reference back. limbo must still take the delete
// for what it is — an object the Bundle declares lost its controller without
// limbo releasing it — delete nothing, disown the object the collector missed
// (or the collector deletes it once the Bundle is gone), and let the Bundle go.
func TestOrphanCascadeDoneBeforeLimboLooks(t *testing.T) {
	ns, b, args := readyThenLimboDown(t, "missed", "orphaned")
	deleteOrphaning(t, b, ns, "missed", "orphaned")
	controlledAgain(t, b, ns, "missed")
	leftBehindOnceBack(t, b, ns, args, "missed", "orphaned")
}

// deleteOrphaning deletes b with --cascade=orphan and waits until the garbage
// collector has removed its finalizer orphan and the named objects lost their
// controller.
func deleteOrphaning(t *testing.T, b *limbov1alpha1.Bundle, ns string, orphaned ...string) {
	t.Helper()
	deleteBundle(t, b, metav1.DeletePropagationOrphan)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if cur := getBundle(t, b); slices.Contains(cur.Finalizers, metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("the garbage collector has not removed its finalizer yet: finalizers %v", cur.Finalizers)
		}
		for _, name := range orphaned {
			if owner := metav1.GetControllerOf(getObject(t, configMapGVK, ns, name)); owner != nil {
				return fmt.Errorf("%s is still controlled by %s", name, owner.Name)
			}
		}
		return nil
	})
}

// controlledAgain gives the named ConfigMaps b as their controller, as if the
// garbage collector had missed them.
func controlledAgain(t *testing.T, b *limbov1alpha1.Bundle, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		patchObject(t, configMapGVK, ns, name, fmt.Sprintf(
			`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":"Bundle","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
			limbov1alpha1.GroupVersion.String(), b.Name, b.UID))
	}
}

// leftBehindOnceBack starts the controller again (args), waits until b is gone
// and checks that the named ConfigMaps are left behind (assertLeftBehind).
func leftBehindOnceBack(t *testing.T, b *limbov1alpha1.Bundle, ns string, args []string, names ...string) {
	t.Helper()
	env.ControllerProcess(t, "second", args...)
	waitBundleGone(t, b)
	assertLeftBehind(t, ns, names...)
}

// readyThenLimboDown starts a controller process for a namespace of the test's
// own, creates Bundle shop there of two ConfigMaps — plain, and with a
// deletionDelay of 2s — waits until it is Ready and stops the controller. It
// returns the namespace, the Bundle and the arguments that start a controller
// for the namespace again.
func readyThenLimboDown(t *testing.T, plain, delayed string) (string, *limbov1alpha1.Bundle, []string) {
	t.Helper()
	env.WithoutController(t)
	ns := env.Namespace(t)
	args := []string{"--namespaces", ns, "--leader-elect=false"}
	first := env.ControllerProcess(t, "first", args...)
	b := createBundle(t, ns, "shop",
		objectResource(t, plain, configMap(plain, map[string]any{"k": "v"}, nil)),
		objectResource(t, delayed, configMap(delayed, map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"})))
	b = waitReady(t, b)
	first.Stop()
	return ns, b, args
}

// assertLeftBehind checks, for a while, that the named ConfigMaps of a Bundle
// deleted with --cascade=orphan stay as --cascade=orphan leaves them: there,
// uncontrolled and out of limbo. The collector deletes a dependent whose owner
// is gone within moments, so a missed disown shows here.
func assertLeftBehind(t *testing.T, ns string, names ...string) {
	t.Helper()
	testenv.Consistently(t, 5*time.Second, func() error {
		for _, name := range names {
			o := getObject(t, configMapGVK, ns, name)
			switch {
			case o == nil || o.GetDeletionTimestamp() != nil:
				return fmt.Errorf("%s was deleted after --cascade=orphan", name)
			case metav1.GetControllerOf(o) != nil:
				return fmt.Errorf("%s is still controlled by the deleted Bundle", name)
			}
			if err := notInLimbo(o); err != nil {
				return err
			}
		}
		return nil
	})
}
