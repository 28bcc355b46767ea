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
	ns := env.Namespace(t)
	sim, url := startStorageOS(t)
	createStorageOSSecret(t, ns)
	app := createK8sNamespace(t, "nsgc-outage-")
	sim.AddNamespace(app)

	b := createBundle(t, ns, "storage", nsgcResourceFor(url, "2s", deletionOnly...))
	waitNSGCReady(t, b, "2 StorageOS namespaces, 0 orphaned")

	sim.SetOutage(true)
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
		if list := tombstones(t, ns); len(list) != 0 {
			return fmt.Errorf("tombstones during the outage: %v", tombstoneItems(t, ns))
		}
		if !backendHas(sim, app) {
			return fmt.Errorf("backend namespace %s deleted", app)
		}
		return nil
	})

	sim.SetOutage(false)
	waitTombstoneFor(t, sim, ns, app, "2s")
	waitBackendGone(t, sim, ns, app)
	waitNSGCReady(t, b, "1 StorageOS namespaces, 0 orphaned")
}
