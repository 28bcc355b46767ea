package it

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A kind a plugin watches whose CRD is installed after the controller started
// (csi-baremetal's after limbo, for node-removal) is watched from the moment its
// CRD is established: an object of it runs the plugin's Bundles again, as one of
// a kind served at the start does. Before, it was watched only after a restart,
// and the plugin waited for another event of its Bundle (here: none comes, so
// the item the plugin now lists would never show).
func TestPluginKindServedAfterTheStartIsWatched(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	b := createBundle(t, ns, "late", pluginResource("items", ns, ""))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceReady, "", "0 items")
	})

	// The plugin's domain changes, which tells nobody; then the CRD of the kind
	// it watches is installed (left installed: the controller's watch of it
	// would retry a deleted kind's listing for the rest of the run), and an
	// object of it created.
	domain.Set("a", true)
	crd := schemalessCRD(testplugin.SignalKind.Group, testplugin.SignalKind.Kind, testplugin.SignalKind.Version)
	if err := env.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitEstablished(t, crd)
	signal := &unstructured.Unstructured{}
	signal.SetGroupVersionKind(testplugin.SignalKind)
	signal.SetName("go")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error { // discovery of the new kind takes a moment
		signal.SetNamespace(ns)
		signal.SetResourceVersion("")
		if err := env.Client.Create(context.Background(), signal); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceMessageIs(cur, "items", limbov1alpha1.ResourceReady, "", "1 items")
	})
}
