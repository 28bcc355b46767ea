package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
)

// gcInterval: 0s disables the periodic GC: a backend namespace that never had a
// Kubernetes Namespace stays, while deletions are still acted upon.
func TestNamespaceGCIntervalZeroDisablesGC(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	never := f.strayNamespace("nsgc-never-")
	app := f.appNamespace(t, "nsgc-nogc-", 0)

	b := f.bundle(t, "1s", `"gcInterval":"0s"`, `"gcDelay":"0s"`)
	waitNSGCReady(t, b, 3)
	testenv.Consistently(t, 5*time.Second, func() error {
		if !f.backendHas(never) {
			return fmt.Errorf("backend namespace %s was deleted", never)
		}
		if list := tombstones(t, f.ns); len(list) != 0 {
			return fmt.Errorf("tombstones: %v", tombstoneItems(t, f.ns))
		}
		return nil
	})
	if n := f.deletes(); n != 0 {
		t.Errorf("%d DELETE calls, want 0", n)
	}

	// Deletions still count. The plugin saw app exist only if some plan ran
	// after app was in the controller's cache: the Consistently above leaves
	// ample time, and the Namespace's own events trigger plans.
	f.orphan(t, app, "1s")
	f.waitBackendGone(t, app)
	if !f.backendHas(never) {
		t.Errorf("backend namespace %s was deleted", never)
	}
}
