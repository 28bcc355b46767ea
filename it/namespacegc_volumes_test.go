package it

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// A backend namespace that still holds volumes (409 "in use") is not deleted:
// its Tombstone retries with backoff, showing the error, and the delete succeeds
// once the namespace is empty.
func TestNamespaceGCNamespaceWithVolumesIsRetried(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app, b, _ := f.deletedApp(t, "nsgc-vol-", 2, "2s")

	// Retried: more than one failed attempt, each recorded. An attempt is
	// counted in status.attempts before its DELETE is sent, so the simulator's
	// count is polled too.
	var last limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		ts := f.tombstone(t, app)
		if ts == nil {
			return fmt.Errorf("the Tombstone went while the namespace holds volumes")
		}
		last = *ts
		if ts.Status.Attempts < 2 || f.deletes() < 2 {
			return fmt.Errorf("attempts = %d, lastError %q, %d DELETE calls; want at least 2 of each", ts.Status.Attempts, ts.Status.LastError, f.deletes())
		}
		return nil
	})
	if !strings.Contains(last.Status.LastError, "still holds volumes") || !strings.Contains(last.Status.LastError, storageossim.MsgInUse) {
		t.Errorf("lastError = %q, want it to say the namespace still holds volumes (%q)", last.Status.LastError, storageossim.MsgInUse)
	}
	if !f.backendHas(app) {
		t.Fatal("a backend namespace holding volumes was deleted")
	}
	waitEventContaining(t, b, corev1.EventTypeNormal, "DeletionScheduled", app) // sanity: the engine scheduled it

	// Emptied: the next attempt deletes it.
	if err := f.sim.SetVolumes(app, 0); err != nil {
		t.Fatal(err)
	}
	f.waitBackendGone(t, app)
}
