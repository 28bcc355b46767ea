package it

import (
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
)

// A deletion still failing after its deadline (the namespace holds volumes) is
// still in limbo: re-creating the Kubernetes Namespace cancels it, and the
// backend namespace is kept. (DESIGN.md §4: an object in limbo that is desired
// again loses its countdown; a Tombstone is cancelled when its item is desired
// again.)
func TestNamespaceGCRecreatedWhileRetryingCancels(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app, _, _ := f.deletedApp(t, "nsgc-retry-", 1, "1s")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := f.tombstone(t, app); ts == nil || ts.Status.Attempts == 0 {
			return fmt.Errorf("no failed attempt yet: %v", tombstoneItems(t, f.ns))
		}
		return nil
	})

	recreateK8sNamespace(t, app)
	f.waitTombstoneGone(t, app)
	if !f.backendHas(app) {
		t.Error("the backend namespace was deleted")
	}
}
