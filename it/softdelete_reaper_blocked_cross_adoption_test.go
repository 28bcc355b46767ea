package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object released by one Bundle's teardown that another Bundle declares to
// adopt it (limbo.dev/adopt), behind a dependency that is not Ready, keeps its
// countdown until the adopting apply: the reaper leaves it alone while that
// Bundle declares it, even past its deadline. Deleted before it adopted the
// object, the adopting Bundle leaves the object to the countdown it kept.
// Before, the countdown was cancelled at once, and the object — labelled with
// the first Bundle's name, neither controlled nor in limbo — stayed for good.
func TestSoftDeleteReaperBlockedAdoptionByAnotherBundle(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// Long enough that Bundle "new" declares db before its deadline: between
	// the release and the creation of "new" the test makes several API calls,
	// and were "new" not there when db is due, the reaper would rightly delete it.
	const delay = 15 * time.Second
	db := configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})
	old := waitReady(t, createBundle(t, ns, "old", objectResource(t, "db", db)))
	deleteBundle(t, old, metav1.DeletePropagationBackground)
	waitBundleGone(t, old)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")

	createWidget(t, ns, "gate", false)
	adopting := withAnnotations(db, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})
	b := createBundle(t, ns, "new", objectResource(t, "gate", withAnnotations(widget("gate"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"})),
		objectResource(t, "db", adopting, limbov1alpha1.Reference{Resource: "gate"}))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
	})
	// Past its deadline, the object is still there, still released to limbo.
	testenv.Consistently(t, time.Until(stamp.Add(delay+2*time.Second)), func() error {
		u := getObject(t, configMapGVK, ns, "db")
		if u == nil {
			return fmt.Errorf("db was deleted while the new Bundle waits to adopt it")
		}
		if err := isReleased(u, old); err != nil {
			return fmt.Errorf("db while the new Bundle waits to adopt it: %w", err)
		}
		return nil
	})

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	waitGone(t, configMapGVK, ns, "db")
}
