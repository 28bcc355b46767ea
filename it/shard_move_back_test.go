package it

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle moved to shard a in the write that drops "x" (an hour's delay):
// shard a finds x with the API server and moves it into its shard (its
// label). x declared again, then the Bundle moved back to the rest (its label
// removed): the rest re-applies x without the label, so x must lose it, as
// "keep" does — or the rest's cache never shows x and shard a's still does.
// Found by the soak (seed 865334873): x kept limbo.dev/shard=a for good.
func TestObjectMovedIntoAShardFollowsItsBundleBack(t *testing.T) {
	env.WithoutController(t)
	ns := env.Namespace(t)
	startShards(t, ns)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	x := objectResource(t, "x", configMap("x", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := waitReady(t, createBundle(t, ns, "web", keep, x))

	move := func(shard string, resources ...limbov1alpha1.Resource) {
		t.Helper()
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			cur := getBundle(t, b)
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			if shard == "" {
				delete(cur.Labels, shardLabel)
			} else {
				cur.Labels[shardLabel] = shard
			}
			cur.Spec.Resources = resources
			return env.Client.Update(context.Background(), cur)
		})
	}
	labelled := func(name, want string) func(*unstructured.Unstructured) error {
		return func(u *unstructured.Unstructured) error {
			if got := u.GetLabels()[shardLabel]; got != want {
				return fmt.Errorf("%s: label %s = %q, want %q", name, shardLabel, got, want)
			}
			return nil
		}
	}

	move("a", keep)
	waitInLimbo(t, configMapGVK, ns, "x")
	waitObject(t, configMapGVK, ns, "x", labelled("x", "a"))
	updateBundle(t, getBundle(t, b), keep, x)
	waitReady(t, b)
	waitObject(t, configMapGVK, ns, "x", labelled("x", "a"))

	move("", keep, x)
	waitObject(t, configMapGVK, ns, "keep", labelled("keep", ""))
	waitObject(t, configMapGVK, ns, "x", labelled("x", ""))
}
