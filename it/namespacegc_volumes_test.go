package it

import (
	"fmt"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// A backend namespace that still holds volumes (409 "in use") is not deleted:
// its Tombstone retries with backoff, showing the error, and the delete succeeds
// once the namespace is empty.
func TestNamespaceGCNamespaceWithVolumesIsRetried(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-vol-")
	sim.AddNamespace(app)
	if err := sim.SetVolumes(app, 2); err != nil {
		t.Fatal(err)
	}

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "2s", deletionOnly...))
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")
	deleteK8sNamespace(t, app)
	waitTombstoneFor(t, sim, ns, app, "2s")

	// Retried: more than one failed attempt, each recorded.
	var last limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		ts := tombstoneFor(t, ns, app)
		if ts == nil {
			return fmt.Errorf("the Tombstone went while the namespace holds volumes")
		}
		last = *ts
		if ts.Status.Attempts < 2 {
			return fmt.Errorf("attempts = %d, lastError %q; want at least 2", ts.Status.Attempts, ts.Status.LastError)
		}
		return nil
	})
	if !strings.Contains(last.Status.LastError, "still holds volumes") || !strings.Contains(last.Status.LastError, storageossim.MsgInUse) {
		t.Errorf("lastError = %q, want it to say the namespace still holds volumes (%q)", last.Status.LastError, storageossim.MsgInUse)
	}
	if !backendHas(sim, app) {
		t.Fatal("a backend namespace holding volumes was deleted")
	}
	if n := sim.Calls(storageossim.OpDeleteNamespace); n < 2 {
		t.Errorf("%d DELETE calls, want at least 2", n)
	}
	waitNSGCEvent(t, b, "Normal", "DeletionScheduled", app) // sanity: the engine scheduled it

	// Emptied: the next attempt deletes it.
	if err := sim.SetVolumes(app, 0); err != nil {
		t.Fatal(err)
	}
	waitBackendGone(t, sim, ns, app)
}
