package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// A delete that keeps failing (409: the namespace still holds volumes) is retried
// with capped exponential backoff (1s, 2s, 4s, ...), as the seed controller's
// rate-limited requeue does: the StorageOS API is not hammered.
func TestNamespaceGCRetryBacksOff(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-backoff-")
	sim.AddNamespace(app)
	if err := sim.SetVolumes(app, 1); err != nil {
		t.Fatal(err)
	}

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "1s", deletionOnly...))
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")
	deleteK8sNamespace(t, app)
	waitTombstoneFor(t, sim, ns, app, "1s")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if n := sim.Calls(storageossim.OpDeleteNamespace); n == 0 {
			return fmt.Errorf("no DELETE yet")
		}
		return nil
	})

	// With backoff 1s, 2s, 4s the next 6s hold at most 3 more attempts; allow a
	// few more for requeues that are not retries.
	const window, most = 6 * time.Second, 6
	first := sim.Calls(storageossim.OpDeleteNamespace)
	testenv.Consistently(t, window, func() error {
		if n := sim.Calls(storageossim.OpDeleteNamespace) - first; n > most {
			ts := tombstoneFor(t, ns, app)
			return fmt.Errorf("%d DELETE calls after the first failed one, want at most %d in %v (Tombstone attempts %d)", n, most, window, ts.Status.Attempts)
		}
		return nil
	})
}
