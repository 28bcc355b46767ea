package it

import (
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// Deleting a Kubernetes Namespace makes its StorageOS namespace an orphan: a
// Tombstone stamped with the resource's deletionDelay, and the backend namespace
// deleted at the deadline, not before. Other backend namespaces stay.
func TestNamespaceGCDeletedNamespace(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-app-")
	other := createK8sNamespace(t, "nsgc-other-")
	sim.AddNamespace(app)
	sim.AddNamespace(other)

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "3s", deletionOnly...))
	waitNSGCReady(t, b, "3 StorageOS namespaces, 0 orphaned")

	deleteK8sNamespace(t, app)
	ts := waitTombstoneFor(t, sim, ns, app, "3s")
	if !backendHas(sim, app) {
		t.Fatalf("backend namespace deleted before its deadline (Tombstone status %+v)", ts.Status)
	}
	if n := sim.Calls(storageossim.OpDeleteNamespace); n != 0 {
		t.Errorf("%d DELETE calls before the deadline", n)
	}
	waitBackendGone(t, sim, ns, app)
	if n := sim.Calls(storageossim.OpDeleteNamespace); n != 1 {
		t.Errorf("%d DELETE calls, want 1", n)
	}
	if !backendHas(sim, other) || !backendHas(sim, storageossim.DefaultNamespace) {
		t.Errorf("backend namespaces now %v; %s and default must stay", sim.Namespaces(), other)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions = %+v", cur.Status.PendingDeletions)
		}
		return nil
	})
}
