package it

import (
	"fmt"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
)

// `kubectl delete tombstone` forces the external delete now, however far the
// deadline: the finalizer deletes the item, then the Tombstone goes.
func TestTombstoneForceWithKubectlDelete(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	_, ts := e.orphan(t, "ext-force", "1h")
	if !e.domain.Exists("orphan") {
		t.Fatal("item deleted before its deadline, an hour away")
	}

	if err := env.Client.Delete(testenv.Context(t, testenv.DefaultTimeout), &ts); err != nil {
		t.Fatalf("kubectl delete tombstone %s: %v", ts.Name, err)
	}
	// Within DefaultTimeout: well short of the hour, so not at the deadline.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Exists("orphan") {
			return fmt.Errorf("item still exists")
		}
		return noTombstones(t, e.ns)()
	})
	if n := e.domain.Deletes("orphan"); n != 1 {
		t.Errorf("%d delete calls for the item, want 1", n)
	}
	if err := e.untouched("keep")(); err != nil {
		t.Error(err)
	}
}
