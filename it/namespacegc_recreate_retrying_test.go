package it

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
)

// A deletion still failing after its deadline (the namespace holds volumes) is
// still in limbo: re-creating the Kubernetes Namespace cancels it, and the
// backend namespace is kept. (DESIGN.md §4: an object in limbo that is desired
// again loses its countdown; a Tombstone is cancelled when its item is desired
// again.)
func TestNamespaceGCRecreatedWhileRetryingCancels(t *testing.T) {
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-retry-")
	sim.AddNamespace(app)
	if err := sim.SetVolumes(app, 1); err != nil {
		t.Fatal(err)
	}

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "1s", deletionOnly...))
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")
	deleteK8sNamespace(t, app)
	waitTombstoneFor(t, sim, ns, app, "1s")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := tombstoneFor(t, ns, app); ts == nil || ts.Status.Attempts == 0 {
			return fmt.Errorf("no failed attempt yet: %v", tombstoneItems(t, ns))
		}
		return nil
	})

	waitK8sNamespaceGone(t, app)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}}); err != nil {
		t.Fatalf("re-create Namespace %s: %v", app, err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := tombstoneFor(t, ns, app); ts != nil {
			return fmt.Errorf("Tombstone still there: %v", tombstoneItems(t, ns))
		}
		return nil
	})
	if !backendHas(sim, app) {
		t.Error("the backend namespace was deleted")
	}
}
