package it

import "testing"

// A kind a plugin watches whose CRD is installed after the controller started
// (csi-baremetal's after limbo, for node-removal) is watched from the moment its
// CRD is established: an object of it runs the plugin's Bundles again, as one of
// a kind served at the start does. Before, it was watched only after a restart,
// and the plugin waited for another event of its Bundle (here: none comes, so
// the item the plugin now lists would never show).
func TestPluginKindServedAfterTheStartIsWatched(t *testing.T) {
	t.Parallel()
	ns, domain, b := signalledBundle(t, "late")

	// The plugin's domain changes, which tells nobody; then the CRD of the kind
	// it watches is installed, and an object of it created.
	domain.Set("a", true)
	installSignalCRD(t)
	createSignal(t, ns, "go")
	waitItems(t, b, 1)
}
