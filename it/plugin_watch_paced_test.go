package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A burst of events of a kind a plugin watches runs each Bundle of the plugin
// at most once per --plugin-event-interval, not once per event. On a cluster of
// 1,000 Nodes, every Node's status update ran node-removal's plan (a listing of
// every Node and csi-baremetal resource) at once: about one core planning,
// whatever changed. The last event is still seen, within the interval.
func TestPluginWatchEventsArePaced(t *testing.T) {
	t.Parallel()
	ns, domain, b := signalledBundle(t, "paced")
	installSignalCRD(t)
	createSignal(t, ns, "first")
	// The first signal's pass has planned: the watch of the kind runs.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if n := len(domain.PlanCalls()); n < 2 {
			return fmt.Errorf("%d plans, want the one after the first signal too", n)
		}
		return nil
	})

	interval := env.ControllerOptions().PluginEventInterval
	start := time.Now()
	before := len(domain.PlanCalls())
	const signals = 40
	for i := range signals {
		createSignal(t, ns, fmt.Sprintf("burst-%d", i))
	}
	domain.Set("a", true) // which only the next plan shows
	createSignal(t, ns, "last")
	waitItems(t, b, 1)
	plans := len(domain.PlanCalls()) - before
	t.Logf("%d signals ran %d plans in %v", signals+1, plans, time.Since(start).Round(time.Millisecond))
	// One pass may have started before the burst, and one pass the status
	// write of "1 items" brings; the burst itself brings at most one pass per
	// interval.
	if most := 2 + int(time.Since(start)/interval) + 1; plans > most {
		t.Errorf("%d signals ran %d plans in %v, want at most %d (one per %v)", signals+1, plans, time.Since(start).Round(time.Millisecond), most, interval)
	}
}

// signalledBundle creates Bundle name in a new namespace with the test plugin's
// resource "items" on an empty domain of the namespace's name, and waits until
// its first plan shows no items.
func signalledBundle(t testing.TB, name string) (string, *testplugin.Domain, *limbov1alpha1.Bundle) {
	t.Helper()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	b := createBundle(t, ns, name, pluginResource("items", ns, ""))
	waitItems(t, b, 0)
	return ns, domain, b
}

// waitItems waits until b's resource "items" is Ready with n items.
func waitItems(t testing.TB, b *limbov1alpha1.Bundle, n int) {
	t.Helper()
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceReady, "", fmt.Sprintf("%d items", n))
	})
}

// installSignalCRD installs the CRD of testplugin.SignalKind, the kind the test
// plugin watches, unless a test did already, and waits until it is established.
// It stays installed: the controller's watch of a deleted kind would retry its
// listing for the rest of the run.
func installSignalCRD(t testing.TB) {
	t.Helper()
	crd := schemalessCRD(testplugin.SignalKind.Group, testplugin.SignalKind.Kind, testplugin.SignalKind.Version)
	if err := env.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitEstablished(t, crd)
}

// createSignal creates a testplugin.SignalKind object in ns, retrying while the
// API server's discovery of the new kind catches up.
func createSignal(t testing.TB, ns, name string) {
	t.Helper()
	signal := &unstructured.Unstructured{}
	signal.SetGroupVersionKind(testplugin.SignalKind)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		signal.SetNamespace(ns)
		signal.SetName(name)
		signal.SetResourceVersion("")
		if err := env.Client.Create(context.Background(), signal); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}
