package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A controller restart in the middle of a countdown keeps the deadline: the
// stamps stay as they were, and the resources go when it comes.
func TestNodeRemovalRestart(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	b := nodeRemovalBundle(t, ns, "8s", map[string]any{})
	before := n.remove(t, b)

	if err := env.RestartController(nil); err != nil {
		t.Fatal(err)
	}
	// The restarted controller runs a pass (the deadline has not come): the stamps
	// are untouched.
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) == 0 {
			return fmt.Errorf("nothing pending")
		}
		return nil
	})
	for i, u := range n.live(t) {
		if u == nil {
			continue // the deadline came meanwhile
		}
		want := before[i].GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]
		if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; got != want {
			t.Errorf("%s %s: stamp %q after the restart, was %q", u.GetKind(), u.GetName(), got, want)
		}
	}
	stamp, err := time.Parse(time.RFC3339, before[0].GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range n.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	if time.Now().Before(stamp.Add(8 * time.Second)) {
		t.Errorf("deleted before the deadline %v", stamp.Add(8*time.Second))
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if c := n.csibmnode(t); c != nil && c.GetDeletionTimestamp() == nil {
			return fmt.Errorf("Csibmnode not deleted")
		}
		return nil
	})
}
