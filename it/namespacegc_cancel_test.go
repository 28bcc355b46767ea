package it

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// A Kubernetes Namespace re-created before the deadline cancels the countdown:
// the Tombstone goes and the backend namespace is never touched.
func TestNamespaceGCRecreatedNamespaceCancels(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-back-")
	sim.AddNamespace(app)

	// The Namespace takes some seconds to go (the namespace controller waits
	// before emptying it); the delay leaves time to re-create it.
	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "10m", deletionOnly...))
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")

	deleteK8sNamespace(t, app)
	waitTombstoneFor(t, sim, ns, app, "10m")
	waitK8sNamespaceGone(t, app)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}}); err != nil {
		t.Fatalf("re-create Namespace %s: %v", app, err)
	}

	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := tombstoneFor(t, ns, app); ts != nil {
			return fmt.Errorf("Tombstone %s still there", ts.Name)
		}
		return nil
	})
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")
	waitNSGCEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", app)
	if !backendHas(sim, app) {
		t.Error("the backend namespace was deleted")
	}
	if n := sim.Calls(storageossim.OpDeleteNamespace); n != 0 {
		t.Errorf("%d DELETE calls, want 0", n)
	}
}
