package it

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
)

// Deleting a Bundle stops its cleanup jobs: pending Tombstones are cancelled,
// never executed, whatever the cascade mode, and their items stay.
func TestTombstoneCancelWhenBundleDeleted(t *testing.T) {
	t.Parallel()
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			e := newExternalItems(t)
			b, _ := e.orphan(t, "ext-deleted", "1h")

			deleteBundle(t, b, policy)
			waitBundleGone(t, b)
			testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, e.ns))
			// In the foreground cascade the garbage collector deletes the Tombstone
			// itself, so who cancels it (and where the event goes) is a race.
			// Events are sent in the background: polled, as they may trail the cancel.
			if policy != metav1.DeletePropagationForeground {
				waitEventContaining(t, b, corev1.EventTypeNormal, "DeletionCancelled", `TestItem "orphan": deletion cancelled (the Bundle is being deleted)`)
			}
			testenv.Consistently(t, 2*time.Second, e.untouched("orphan", "keep"))
		})
	}
}
