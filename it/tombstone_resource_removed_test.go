package it

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/it/testenv"
)

// Removing a plugin resource from its Bundle stops its deletions: its pending
// Tombstones are cancelled and their items stay.
func TestTombstoneCancelWhenResourceRemoved(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b, _ := e.orphan(t, "ext-removed", "1h", keep)

	updateBundle(t, b, keep)
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, e.ns))
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", `TestItem "orphan": deletion cancelled (resource "items" left the Bundle)`)
	waitReady(t, b)
	noPendingDeletions(t, b)
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := e.untouched("orphan", "keep")(); err != nil {
			return err
		}
		return noTombstones(t, e.ns)()
	})
}
