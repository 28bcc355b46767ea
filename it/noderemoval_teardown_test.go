package it

import (
	"context"
	"testing"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Deleting the Bundle (background cascade) cancels the countdowns of its plugin's
// object items, never executes them: removing a cleanup job stops its deletions.
func TestNodeRemovalTeardownCancels(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	b := nodeRemovalBundle(t, ns, "1h", map[string]any{})
	inLimbo := n.remove(t, b)

	if err := env.Client.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitGone(t, limbov1alpha1.BundleGVK, ns, b.Name)
	for i, o := range n.objects {
		u := waitObject(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName(), notInLimbo)
		if u.GetUID() != inLimbo[i].GetUID() || u.GetDeletionTimestamp() != nil {
			t.Errorf("%s %s was deleted by the teardown", u.GetKind(), u.GetName())
		}
	}
}
