package it

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle whose spec is invalid when it is deleted cannot run the teardown of
// its plugin resources (deorbit's, here the test plugin's twin): it is held,
// saying why, until the spec is fixed, and then torn down as usual. It used to go
// at once, its plugin teardown silently skipped.
func TestTeardownOfAnInvalidSpecWaitsForItsPluginTeardown(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	cluster := teardownResource("cluster", ns)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "broken", cluster, keep)
	waitReady(t, b)

	broken := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil), limbov1alpha1.Reference{Resource: "missing"})
	updateBundle(t, b, cluster, broken)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return conditionIs(cur, limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonInvalidSpec)
	})
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	held := waitTeardown(t, b, "plugin resource cluster (its teardown cannot run while the Bundle's spec is invalid")
	failure := false
	for _, c := range held.Status.Conditions {
		failure = failure || (c.Type == limbov1alpha1.ConditionDeletionFailure && strings.Contains(c.Message, `references missing resource "missing"`))
	}
	if !failure {
		t.Errorf("conditions %+v: no DeletionFailure naming the spec's error", held.Status.Conditions)
	}
	if getObject(t, configMapGVK, ns, "keep") == nil {
		t.Error("the Bundle's objects went before its plugin teardown ran")
	}

	updateBundle(t, b, cluster, keep) // fixed
	waitBundleGone(t, b)
	if err := noObject(configMapGVK, ns, "keep")(); err != nil {
		t.Error(fmt.Errorf("after the teardown: %w", err))
	}
}
