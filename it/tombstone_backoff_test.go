package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
)

// Failed external deletes are retried with capped exponential backoff: 1s, 2s,
// 4s, ... after the first failure. A retry loop without backoff hammers the
// external system. The backoff's arithmetic is pkg/controller/tombstone's unit
// tests'; this test proves what they cannot: that in a running controller
// nothing retries sooner, in particular that the Tombstone's own status write
// (attempts, lastError) does not trigger an immediate reconcile.
func TestTombstoneRetryBackoff(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	e.domain.FailDeletes(testplugin.ErrInjected)
	_, ts := e.orphan(t, "ext-backoff", "1s")

	// The first failure...
	waitAttempts(t, &ts, 1)
	// ...then retries 1s and 3s after it: at most 2 more calls in the next 2.5s
	// (3 with slack for a call in flight). A slow machine makes fewer calls, not
	// more.
	first := e.domain.Deletes("orphan")
	testenv.Consistently(t, 2500*time.Millisecond, func() error {
		if n := e.domain.Deletes("orphan") - first; n > 3 {
			return fmt.Errorf("%d more delete calls within 2.5s after the first failure: no backoff", n)
		}
		return nil
	})
}
