package it

import (
	"testing"

	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// `kubectl delete tombstone` forces the external delete now, whatever the delay.
func TestNamespaceGCDeleteTombstoneForces(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-force-")
	sim.AddNamespace(app)

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "1h", deletionOnly...))
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")
	deleteK8sNamespace(t, app)
	ts := waitTombstoneFor(t, sim, ns, app, "1h")
	if !backendHas(sim, app) {
		t.Fatal("deleted before the deadline, an hour away")
	}

	if out, err := kubectlNSGC(t, "delete", "tombstone", "-n", ns, ts.Name); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	waitBackendGone(t, sim, ns, app)
	if n := sim.Calls(storageossim.OpDeleteNamespace); n != 1 {
		t.Errorf("%d DELETE calls, want 1", n)
	}
	waitNSGCReady(t, b, "1 StorageOS namespaces, 0 orphaned")
}
