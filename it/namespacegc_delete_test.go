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
	t.Parallel()
	f := newNSGCFixture(t)
	other := f.appNamespace(t, "nsgc-other-", 0)
	app, b, ts := f.deletedApp(t, "nsgc-app-", 0, "3s")
	if !f.backendHas(app) {
		t.Fatalf("backend namespace deleted before its deadline (Tombstone status %+v)", ts.Status)
	}
	if n := f.deletes(); n != 0 {
		t.Errorf("%d DELETE calls before the deadline", n)
	}
	f.waitBackendGone(t, app)
	if n := f.deletes(); n != 1 {
		t.Errorf("%d DELETE calls, want 1", n)
	}
	if !f.backendHas(other) || !f.backendHas(storageossim.DefaultNamespace) {
		t.Errorf("backend namespaces now %v; %s and default must stay", f.sim.Namespaces(), other)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur := waitNSGCReady(t, b, 2)
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions = %+v", cur.Status.PendingDeletions)
		}
		return nil
	})
}
