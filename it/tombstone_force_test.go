package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
)

// `kubectl delete tombstone` forces the external delete now, however far the
// deadline: the finalizer deletes the item, then the Tombstone goes.
func TestTombstoneForceWithKubectlDelete(t *testing.T) {
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	b := createBundle(t, ns, "ext-force", pluginResource("items", ns, "1h"))
	waitReady(t, b)
	ts := waitOneTombstone(t, ns, "orphan")
	if !domain.Exists("orphan") {
		t.Fatal("item deleted before its deadline, an hour away")
	}

	start := time.Now()
	if err := env.Client.Delete(testenv.Context(t, testenv.DefaultTimeout), &ts); err != nil {
		t.Fatalf("kubectl delete tombstone %s: %v", ts.Name, err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if domain.Exists("orphan") {
			return fmt.Errorf("item still exists")
		}
		return noTombstones(t, ns)()
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the forced delete took %v", took)
	}
	if n := domain.Deletes("orphan"); n != 1 {
		t.Errorf("%d delete calls for the item, want 1", n)
	}
	if !domain.Exists("keep") || domain.Deletes("keep") != 0 {
		t.Error("the desired item was touched")
	}
}
