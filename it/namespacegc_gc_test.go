package it

import (
	"testing"

	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The periodic GC removes backend namespaces that never had a Kubernetes
// Namespace: the first run gcDelay after the plugin starts, then every
// gcInterval. Backend namespaces whose Kubernetes Namespace exists stay.
func TestNamespaceGCPeriodicGC(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-gc-")
	sim.AddNamespace(app)
	never := uniqueName("nsgc-never-")
	sim.AddNamespace(never)

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "1s", `"gcDelay":"1s"`, `"gcInterval":"3s"`))
	waitReady(t, b)
	waitTombstoneFor(t, sim, ns, never, "1s")
	waitBackendGone(t, sim, ns, never)

	// A later run finds the next one.
	later := uniqueName("nsgc-later-")
	sim.AddNamespace(later)
	waitTombstoneFor(t, sim, ns, later, "1s")
	waitBackendGone(t, sim, ns, later)

	for _, keep := range []string{app, storageossim.DefaultNamespace} {
		if !backendHas(sim, keep) {
			t.Errorf("backend namespace %s was deleted", keep)
		}
	}
	if n := sim.Calls(storageossim.OpDeleteNamespace); n != 2 {
		t.Errorf("%d DELETE calls, want 2", n)
	}
}
