package it

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An external item that is desired again before its deadline keeps its life: its
// Tombstone is removed, and the item is never touched.
func TestTombstoneCancelWhenDesiredAgain(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	b, _ := e.orphan(t, "ext-cancel", "1h")

	e.domain.Set("orphan", true)
	replan(t, b, []limbov1alpha1.Resource{e.resource("1h")}, "replan")
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, e.ns))
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", `TestItem "orphan": deletion cancelled (the item is desired again)`)
	noPendingDeletions(t, b)
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := e.untouched("orphan")(); err != nil {
			return err
		}
		return noTombstones(t, e.ns)()
	})
}
