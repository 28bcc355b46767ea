package it

import (
	"bytes"
	"testing"

	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// A clusterCIDR narrowed so that a route in limbo falls outside it: the route is
// no longer this resource's to delete, so its Tombstone is cancelled when it
// comes due (here: forced) instead of failing at every retry forever, and the
// route is never touched.
func TestRouteGCNarrowedCIDRCancels(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})
	f.start("1h")
	ts := f.waitTombstone(orphan, "1h")

	narrowed := f.resource("1h")
	// 198.19.0.0/23 holds live (198.19.1.0/24), not orphan (198.19.2.0/24).
	narrowed.Plugin.Spec.Raw = bytes.Replace(narrowed.Plugin.Spec.Raw, []byte(`"clusterCIDR":"`+rgcCIDR+`"`), []byte(`"clusterCIDR":"198.19.0.0/23"`), 1)
	updateBundle(t, f.bundle, narrowed)
	f.waitReady("1 routes in 198.19.0.0/23, 0 orphaned; 1 servers")

	if out, err := kubectl(t, "delete", "tombstone", "-n", f.ns, ts.Name, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete tombstone: %v\n%s", err, out)
	}
	waitTombstoneCancelled(t, ts, "not inside the cluster CIDR 198.19.0.0/23")
	if err := f.routesUntouched(live, orphan)(); err != nil {
		t.Error(err)
	}
}
