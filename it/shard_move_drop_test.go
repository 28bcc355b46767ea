package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle moved to another shard in the same write that drops two of its
// resources (one GitOps commit that relabels the Bundle and edits its spec):
// "drop" (no delay) and "later" (an hour). The shard the Bundle left never sees
// the new generation, and the new shard's cache does not show the two objects
// (they carry the old shard's label); they were never in pendingDeletions and
// their kind is still in use, so nothing used to ask the API server for them:
// both stayed controlled by the Bundle, neither stamped nor deleted, until the
// Bundle went. The new shard finds them through the previous status, which
// names them (status.resources), moves them into its shard, deletes "drop" at
// once and puts "later" in limbo for its hour.
func TestObjectsDroppedInTheWriteThatMovesTheirBundle(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	procs := startShards(t, ns)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	drop := objectResource(t, "drop", configMap("drop", map[string]any{"a": "b"}, nil))
	later := objectResource(t, "later", configMap("later", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := waitReady(t, createBundle(t, ns, "web", keep, drop, later))

	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := getBundle(t, b)
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[shardLabel] = "a"
		cur.Spec.Resources = []limbov1alpha1.Resource{keep}
		return env.Client.Update(context.Background(), cur)
	})

	waitGone(t, configMapGVK, ns, "drop")
	waitInLimbo(t, configMapGVK, ns, "later")
	// Moved into shard a: its passes see "later" in their cache from then on.
	waitObject(t, configMapGVK, ns, "later", func(u *unstructured.Unstructured) error {
		if got := u.GetLabels()[shardLabel]; got != "a" {
			return fmt.Errorf("later: label %s = %q, want a", shardLabel, got)
		}
		if owner := metav1.GetControllerOf(u); owner == nil || owner.UID != b.UID {
			return fmt.Errorf("later: controller %v, want Bundle web", owner)
		}
		return nil
	})
	// The pass that stamps "later" writes its status after: waited for, then
	// kept.
	laterAlone := func() error {
		cur := getBundle(t, b)
		if cur.Status.PendingDeletionCount != 1 || len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "later" {
			return fmt.Errorf("pendingDeletions = %+v (count %d), want later alone", cur.Status.PendingDeletions, cur.Status.PendingDeletionCount)
		}
		if cur.Status.PendingDeletions[0].Resource != "later" {
			return fmt.Errorf("later's entry names resource %q, want later", cur.Status.PendingDeletions[0].Resource)
		}
		if getObject(t, configMapGVK, ns, "later") == nil {
			return fmt.Errorf("later was deleted, an hour early")
		}
		return nil
	}
	testenv.Eventually(t, testenv.DefaultTimeout, laterAlone)
	testenv.Consistently(t, 3*time.Second, laterAlone)
	// The new shard deleted "drop"; the shard the Bundle left deleted nothing.
	wantDeletions(t, procs, map[string]float64{"a": 1, "rest": 0})
}
