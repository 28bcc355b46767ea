package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// A StorageOS outage fails the plugin: the resource shows Error with the API's
// error, nothing is scheduled, cancelled or deleted; when the outage ends, the
// deletion that happened meanwhile is acted upon.
func TestNamespaceGCBackendOutage(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app := f.appNamespace(t, "nsgc-outage-", 0)
	b := f.deletionOnlyBundle(t, "2s")

	// A plan in flight when the outage starts may have listed the backend just
	// before it and still see app's deletion. So a plan must fail first: any Namespace
	// event re-runs the plugin, and plans of one resource never overlap, so once a
	// failed plan is reported, every later plan runs during the outage.
	f.sim.SetOutage(true)
	createK8sNamespace(t, "nsgc-outage-trigger-")
	waitOutageReported(t, b)
	deleteK8sNamespace(t, app)
	waitK8sNamespaceGone(t, app)
	testenv.Consistently(t, 3*time.Second, func() error {
		if list := tombstones(t, f.ns); len(list) != 0 {
			return fmt.Errorf("tombstones during the outage: %v", tombstoneItems(t, f.ns))
		}
		if !f.backendHas(app) {
			return fmt.Errorf("backend namespace %s deleted", app)
		}
		return nil
	})

	f.sim.SetOutage(false)
	f.waitTombstone(t, app, "2s")
	f.waitBackendGone(t, app)
	waitNSGCReady(t, b, 1)
}

// waitOutageReported waits until the resource reports the StorageOS outage: Error,
// PluginFailed, with the API's answer, and the Bundle not Ready.
func waitOutageReported(t testing.TB, b *limbov1alpha1.Bundle) {
	t.Helper()
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, nsgcResource, limbov1alpha1.ResourceError, "PluginFailed"); err != nil {
			return err
		}
		msg := resourceStatus(cur, nsgcResource).Message
		for _, part := range []string{`plugin "namespace-gc"`, "503", storageossim.MsgUnavailable} {
			if !strings.Contains(msg, part) {
				return fmt.Errorf("resource message %q lacks %q", msg, part)
			}
		}
		return conditionIs(cur, "Ready", "False", "")
	})
}
