package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A Kubernetes Namespace re-created before the deadline cancels the countdown:
// the Tombstone goes and the backend namespace is never touched.
func TestNamespaceGCRecreatedNamespaceCancels(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	// The Namespace takes some seconds to go (the namespace controller waits
	// before emptying it); the delay leaves time to re-create it.
	app, b, _ := f.deletedApp(t, "nsgc-back-", 0, "10m")
	recreateK8sNamespace(t, app)

	f.waitTombstoneGone(t, app)
	waitNSGCReady(t, b, 2)
	waitEventContaining(t, b, corev1.EventTypeNormal, "DeletionCancelled", app)
	if !f.backendHas(app) {
		t.Error("the backend namespace was deleted")
	}
	if n := f.deletes(); n != 0 {
		t.Errorf("%d DELETE calls, want 0", n)
	}
}
