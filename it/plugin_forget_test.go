package it

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
)

// Plugins that remember something per Bundle resource (namespace-gc's Namespaces
// seen, route-gc's poll times) are told when the Bundle is gone, so that what they
// keep does not grow with every Bundle ever deleted; a Bundle that still exists is
// not forgotten.
func TestPluginsForgetDeletedBundles(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	gone := createBundle(t, ns, "gone", pluginResource("items", ns, "1h"))
	kept := createBundle(t, ns, "kept", pluginResource("items", ns, "1h"))
	gone, kept = waitReady(t, gone), waitReady(t, kept)
	deleteBundle(t, gone, metav1.DeletePropagationBackground)
	waitBundleGone(t, gone)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if !external.Forgotten(gone.UID) {
			return fmt.Errorf("the plugin was not told that Bundle gone (%s) is gone", gone.UID)
		}
		return nil
	})
	if external.Forgotten(kept.UID) {
		t.Errorf("the plugin was told to forget Bundle kept, which exists")
	}
}
