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
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	resources := []limbov1alpha1.Resource{pluginResource("items", ns, "1h")}
	b := createBundle(t, ns, "ext-cancel", resources...)
	waitReady(t, b)
	waitOneTombstone(t, ns, "orphan")

	domain.Set("orphan", true)
	replan(t, b, resources, "replan")
	testenv.Eventually(t, testenv.DefaultTimeout, noTombstones(t, ns))
	waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", `TestItem "orphan": deletion cancelled (the item is desired again)`)
	noPendingDeletions(t, b)
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := itemUntouched(domain, "orphan")(); err != nil {
			return err
		}
		return noTombstones(t, ns)()
	})
}
