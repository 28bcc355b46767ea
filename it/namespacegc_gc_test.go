package it

import (
	"testing"

	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The periodic GC removes backend namespaces that never had a Kubernetes
// Namespace: the first run gcDelay after the plugin starts, then every
// gcInterval. Backend namespaces whose Kubernetes Namespace exists stay.
func TestNamespaceGCPeriodicGC(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app := f.appNamespace(t, "nsgc-gc-", 0)
	never := f.strayNamespace("nsgc-never-")

	waitReady(t, f.bundle(t, "1s", `"gcDelay":"1s"`, `"gcInterval":"3s"`))
	f.waitTombstone(t, never, "1s")
	f.waitBackendGone(t, never)

	// A later run finds the next one.
	later := f.strayNamespace("nsgc-later-")
	f.waitTombstone(t, later, "1s")
	f.waitBackendGone(t, later)

	for _, keep := range []string{app, storageossim.DefaultNamespace} {
		if !f.backendHas(keep) {
			t.Errorf("backend namespace %s was deleted", keep)
		}
	}
	if n := f.deletes(); n != 2 {
		t.Errorf("%d DELETE calls, want 2", n)
	}
}
