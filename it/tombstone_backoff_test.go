package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Failed external deletes are retried with capped exponential backoff: 1s, 2s,
// 4s, ... after the first failure. A retry loop without backoff hammers the
// external system.
func TestTombstoneRetryBackoff(t *testing.T) {
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	domain.FailDeletes(testplugin.ErrInjected)
	t.Cleanup(func() { domain.FailDeletes(nil) })
	b := createBundle(t, ns, "ext-backoff", pluginResource("items", ns, "1s"))
	waitReady(t, b)
	ts := waitOneTombstone(t, ns, "orphan")

	// The first failure...
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Tombstone
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(&ts), &cur); err != nil {
			return err
		}
		if cur.Status.Attempts < 1 {
			return fmt.Errorf("status.attempts = %d", cur.Status.Attempts)
		}
		return nil
	})
	// ...then retries 1s and 3s after it: at most 2 more calls in the next 2.5s
	// (3 with slack for a call in flight).
	first := domain.Deletes("orphan")
	testenv.Consistently(t, 2500*time.Millisecond, func() error {
		if n := domain.Deletes("orphan") - first; n > 3 {
			return fmt.Errorf("%d more delete calls within 2.5s after the first failure: no backoff", n)
		}
		return nil
	})
}
