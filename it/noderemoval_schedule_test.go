package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A drained Node that is deleted puts its five kinds of csi-baremetal resources in
// limbo: stamped with the resource's delay, listed in pendingDeletions with their
// deadline, announced by events; nothing is deleted before the deadline.
func TestNodeRemovalSchedule(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	keep := newCSINode(t, ns, "n2") // a healthy node: never touched
	b := nodeRemovalBundle(t, ns, "1h", map[string]any{})
	inLimbo := n.remove(t, b)
	for _, u := range inLimbo {
		if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != "1h" {
			t.Errorf("%s %s: deletionDelay %q, want the resource's 1h", u.GetKind(), u.GetName(), got)
		}
	}
	n.waitPending(t, b, func(pd limbov1alpha1.PendingDeletion) error {
		if pd.DeletionTimestamp == nil || pd.DeleteAfter == nil || pd.DeleteAfter.Sub(pd.DeletionTimestamp.Time) != time.Hour {
			return fmt.Errorf("no one-hour countdown: %+v", pd)
		}
		return nil
	})
	waitEventContaining(t, b, "Normal", limbov1alpha1.EventDeletionScheduled, n.uuid, "is in limbo for 1h0m0s")
	waitNodeRemovalReady(t, b, "removed (in limbo): "+n.name)

	testenv.Consistently(t, 2*time.Second, func() error {
		for i, u := range n.live(t) {
			if u == nil || u.GetUID() != inLimbo[i].GetUID() || u.GetDeletionTimestamp() != nil {
				return fmt.Errorf("%s %s was deleted before its deadline", n.objects[i].GetKind(), n.objects[i].GetName())
			}
		}
		for _, u := range keep.live(t) {
			if err := notInLimbo(u); err != nil {
				return err
			}
		}
		return nil
	})
}
