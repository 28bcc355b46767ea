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

	f.sim.SetOutage(true)
	deleteK8sNamespace(t, app)
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
