package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// `kubectl delete bundle --cascade=orphan` deletes nothing, not even later: an
// object whose countdown was running when its Bundle went keeps living (the
// garbage collector leaves it without a controller, which the reaper would take
// for a released object if it were still stamped).
func TestOrphanCascadeStopsCountdowns(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "shop", keep,
		objectResource(t, "leaving", configMap("leaving", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "6s"})))
	waitReady(t, b)
	updateBundle(t, b, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "leaving")
	deadline := stamp.Add(6 * time.Second)

	deleteBundle(t, b, metav1.DeletePropagationOrphan)
	waitBundleGone(t, b)
	leaving := waitObject(t, configMapGVK, ns, "leaving", notInLimbo)
	testenv.Consistently(t, time.Until(deadline)+3*time.Second, func() error {
		o := getObject(t, configMapGVK, ns, "leaving")
		if o == nil || o.GetDeletionTimestamp() != nil {
			return fmt.Errorf("leaving was deleted after --cascade=orphan")
		}
		if o.GetUID() != leaving.GetUID() {
			return fmt.Errorf("leaving was replaced")
		}
		return nil
	})
}

// --cascade=orphan leaves alone what the Bundle holds, and only that: an object
// a predecessor of the same name released to limbo (its teardown's countdown
// runs, the reaper deletes it) is not the new Bundle's, and still goes at its
// deadline when the new Bundle is deleted with --cascade=orphan. (Found by the
// soak: the new Bundle's orphan teardown cancelled the released object's
// countdown.)
func TestOrphanCascadeLeavesPredecessorsReleasedObjects(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const delay = 12 * time.Second
	old := createBundle(t, ns, "reborn",
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	old = waitReady(t, old)
	deleteBundle(t, old, metav1.DeletePropagationBackground)
	waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error { return isReleased(u, old) })
	waitBundleGone(t, old)

	// The successor declares another ConfigMap, so that its pass lists the kind
	// and sees db, labelled with the same Bundle name.
	next := createBundle(t, ns, "reborn", objectResource(t, "app", configMap("app", map[string]any{"a": "b"}, nil)))
	waitReady(t, next)
	deleteBundle(t, next, metav1.DeletePropagationOrphan)
	waitBundleGone(t, next)
	if err := isReleased(getObject(t, configMapGVK, ns, "db"), old); err != nil {
		t.Errorf("after the successor's --cascade=orphan delete: %v", err)
	}
	waitGone(t, configMapGVK, ns, "db")
	if app := getObject(t, configMapGVK, ns, "app"); app == nil {
		t.Error("the successor's own object was deleted after --cascade=orphan")
	}
}
