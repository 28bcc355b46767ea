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
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "ext-removed", keep, pluginResource("items", ns, "1h"))
	waitReady(t, b)
	waitOneTombstone(t, ns, "orphan")

	updateBundle(t, b, keep)
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, ns))
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", `TestItem "orphan": deletion cancelled (resource "items" left the Bundle)`)
	waitReady(t, b)
	noPendingDeletions(t, b)
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := itemUntouched(domain, "orphan")(); err != nil {
			return err
		}
		if err := itemUntouched(domain, "keep")(); err != nil {
			return err
		}
		return noTombstones(t, ns)()
	})
}
