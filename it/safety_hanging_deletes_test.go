package it

import (
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Hanging external deletes never hold the Tombstone workers: while a backend
// hangs on the deletes of twice as many due items as the controller has
// workers (a StorageOS or OpenStack endpoint that accepts connections and never
// answers, until the plugin call timeout), the due item of another backend is
// deleted at once — before any of the hanging calls returns. A hanging backend
// is sent at most as many deletes at a time as the controller has workers, so
// that limbo never piles a herd on an endpoint that is slow but alive; the rest
// wait their turn and are deleted once the backend answers.
//
// The yardstick is the hang itself (hang): a worker that waited for its delete
// would be held until the call gave up, after plugin.CallTimeout.
func TestHangingExternalDeletesDoNotHoldWorkers(t *testing.T) {
	t.Parallel()
	workers := env.ControllerOptions().Workers
	e := newExternalItems(t)
	hangingNS := env.Namespace(t) // its own, so that e's namespace holds e's Tombstone only
	hanging := external.Domain(hangingNS)
	t.Cleanup(func() { hanging.Unblock(testplugin.DeleteCall) })
	var dead []string
	for i := range 2 * workers {
		dead = append(dead, fmt.Sprintf("dead-%d", i))
		hanging.Set(dead[i], false)
	}
	hanging.Block(testplugin.DeleteCall)
	createBundle(t, hangingNS, "dying-backend", pluginResource("items", hangingNS, "1s"))

	h := waitHang(t, hanging, testplugin.DeleteCall, workers, workers) // --workers per backend at most

	// The orphan's Tombstone is due a second after it is made and may be
	// executed and gone before a List sees it: the log watches for it.
	log := watchTombstones(t, e.ns)
	waitReady(t, createBundle(t, e.ns, "healthy-backend", e.resource("1s")))
	log.wait(t, "the healthy backend's orphan", func(item limbov1alpha1.ExternalItem) bool {
		return item.ID == "orphan" && item.Kind == testplugin.ItemKind
	}, func() string { return fmt.Sprintf("tombstones: %v", tombstoneItems(t, e.ns)) })
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Exists("orphan") {
			return fmt.Errorf("the healthy backend's orphan still exists (%d delete calls); Tombstones: %v",
				e.domain.Deletes("orphan"), tombstoneItems(t, e.ns))
		}
		return nil
	})
	h.still(t, "the healthy backend's orphan was deleted")
	if err := e.untouched("keep")(); err != nil {
		t.Error(err)
	}
	for _, id := range dead {
		if !hanging.Exists(id) {
			t.Errorf("item %s of the hanging backend is gone while its deletes hang", id)
		}
	}

	// The backend answers again: every item is deleted, those that waited for a
	// turn too, and the Tombstones go.
	hanging.Unblock(testplugin.DeleteCall)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		for _, id := range dead {
			if hanging.Exists(id) {
				return fmt.Errorf("item %s still exists (%d delete calls); Tombstones: %v", id, hanging.Deletes(id), tombstoneItems(t, hangingNS))
			}
		}
		return noTombstones(t, hangingNS)()
	})
}
