package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
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
	stamp, err := time.Parse(time.RFC3339, ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatalf("Tombstone stamp: %v", err)
	}
	deadline := stamp.Add(3 * time.Second)
	f.waitBackendGone(t, app)
	// When the DELETE came, as the simulator saw it: the wait above has no
	// bound below.
	if at := f.sim.FirstCall(storageossim.OpDeleteNamespace); at.Before(deadline) {
		t.Errorf("backend namespace DELETE at %s, before its deadline %s", at.Format(time.RFC3339Nano), deadline)
	}
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
