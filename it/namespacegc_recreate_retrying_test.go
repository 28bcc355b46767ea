package it

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
)

// A deletion still failing after its deadline (the namespace holds volumes) is
// still in limbo: re-creating the Kubernetes Namespace cancels it, and the
// backend namespace is kept. (DESIGN.md §4: an object in limbo that is desired
// again loses its countdown; a Tombstone is cancelled when its item is desired
// again.) The Tombstone's next retry refuses on its own, before the Bundle's
// pass has cancelled it: here StorageOS hangs, so that no pass can.
func TestNamespaceGCRecreatedWhileRetryingCancels(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	// The deadline comes about when the namespace controller has removed the
	// Namespace (some seconds), so that the retry after the re-create is a
	// short backoff away.
	app, _, ts := f.deletedApp(t, "nsgc-retry-", 1, "5s")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := f.tombstone(t, app); ts == nil || ts.Status.Attempts == 0 {
			return fmt.Errorf("no failed attempt yet: %v", tombstoneItems(t, f.ns))
		}
		return nil
	})
	waitK8sNamespaceGone(t, app)

	// StorageOS hangs from now on: the Bundle's pass, which would cancel the
	// Tombstone (its Namespace exists again), cannot list the backend. The
	// Tombstone's own retry refusing is then the only way the cancel comes with
	// this message; without that refusal the retry would send a DELETE, which
	// hangs, and nothing cancels. (A DELETE an attempt under way since before
	// the re-create sends is not counted against it: a delete already sent
	// cannot be called back, and the volumes refuse it.)
	release := f.sim.Block()
	t.Cleanup(release)
	recreateK8sNamespace(t, app)
	waitTombstoneCancelled(t, ts, fmt.Sprintf("the Kubernetes Namespace %s exists again", strconv.Quote(app)))
	release()
	if !f.backendHas(app) {
		t.Error("the backend namespace was deleted")
	}
}
