package it

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A forced Tombstone (`kubectl delete tombstone`) of a route whose server came
// back before the plugin's next poll saw it: the route is desired again, so it is
// never removed, and the Tombstone is cancelled instead of failing at every retry
// with the user's delete hanging. (No pass cancels a forced Tombstone: its
// plugin's delete has to refuse the item.)
func TestRouteGCForcedTombstoneServerBack(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})
	res := f.resource("1h")
	var spec map[string]any
	if err := json.Unmarshal(res.Plugin.Spec.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	spec["interval"] = "1h" // no poll sees the server come back
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	res.Plugin.Spec.Raw = raw
	f.bundle = createBundle(t, f.ns, "cluster", res)
	ts := f.waitTombstone(orphan, "1h")

	f.sim.AddServerAt("node-2", orphan.NextHop)
	if out, err := kubectl(t, "delete", "tombstone", "-n", f.ns, ts.Name, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	waitTombstoneCancelled(t, ts, "its next hop is an address of server")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if again := f.tombstoneOf(orphan); again != nil {
			return fmt.Errorf("a new Tombstone of the route, desired again: %+v", again.Spec.Item)
		}
		return nil
	})
	if err := f.routesUntouched(live, orphan)(); err != nil {
		t.Error(err)
	}
}
