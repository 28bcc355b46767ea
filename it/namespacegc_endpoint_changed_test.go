package it

import (
	"fmt"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The StorageOS endpoint changed while a backend namespace is in limbo: its
// Tombstone stands for a namespace of the old endpoint's cluster, which the
// resource no longer names. Forced (here) or at its deadline it is cancelled —
// neither cluster is touched. Before, its delete listed the new endpoint, did not
// find the ID there and reported the namespace Deleted while it stayed on the
// old cluster.
func TestNamespaceGCEndpointChanged(t *testing.T) {
	t.Parallel()
	f := newNSGCFixture(t)
	app, b, ts := f.deletedApp(t, "nsgc-endpoint-", 0, "1h")

	newSim, newURL := startStorageOS(t)
	moved := f.resource("1h", deletionOnly...)
	moved.Plugin.Spec.Raw = []byte(strings.Replace(string(moved.Plugin.Spec.Raw), fmt.Sprintf("%q", f.url), fmt.Sprintf("%q", newURL), 1))
	updateBundle(t, b, moved)
	waitNSGCReady(t, b, len(newSim.Namespaces()))

	if out, err := kubectl(t, "delete", "tombstone", "-n", f.ns, ts.Name, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	waitTombstoneCancelled(t, ts, "was found on StorageOS "+f.url)
	if !f.backendHas(app) {
		t.Error("the old endpoint's backend namespace was deleted")
	}
	if n, m := f.deletes(), newSim.Calls(storageossim.OpDeleteNamespace); n+m != 0 {
		t.Errorf("DELETE calls: %d on the old endpoint, %d on the new, want none", n, m)
	}
	for _, e := range tombstoneEvents(t, ts) {
		if e.Reason == limbov1alpha1.EventDeleted {
			t.Errorf("event %s %q: the namespace was never deleted", e.Reason, e.Message)
		}
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := f.tombstone(t, app); ts != nil {
			return fmt.Errorf("a Tombstone of %s again: %+v", app, ts.Spec.Item)
		}
		return nil
	})
}
