package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// gcInterval: 0s disables the periodic GC: a backend namespace that never had a
// Kubernetes Namespace stays, while deletions are still acted upon.
func TestNamespaceGCIntervalZeroDisablesGC(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	never := uniqueName("nsgc-never-")
	sim.AddNamespace(never)
	app := createK8sNamespace(t, "nsgc-nogc-")
	sim.AddNamespace(app)

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "1s", `"gcInterval":"0s"`, `"gcDelay":"0s"`))
	waitNSGCReady(t, b, "3 StorageOS namespaces, 0 orphaned")
	testenv.Consistently(t, 5*time.Second, func() error {
		if !backendHas(sim, never) {
			return fmt.Errorf("backend namespace %s was deleted", never)
		}
		if list := tombstones(t, ns); len(list) != 0 {
			return fmt.Errorf("tombstones: %v", tombstoneItems(t, ns))
		}
		return nil
	})
	if n := sim.Calls(storageossim.OpDeleteNamespace); n != 0 {
		t.Errorf("%d DELETE calls, want 0", n)
	}

	// Deletions still count. The plugin saw app exist only if some plan ran
	// after app was in the controller's cache: the Consistently above leaves
	// ample time, and the Namespace's own events trigger plans.
	deleteK8sNamespace(t, app)
	waitTombstoneFor(t, sim, ns, app, "1s")
	waitBackendGone(t, sim, ns, app)
	if !backendHas(sim, never) {
		t.Errorf("backend namespace %s was deleted", never)
	}
}
