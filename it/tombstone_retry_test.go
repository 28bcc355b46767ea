package it

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A failing external delete is retried, each failure counted in status.attempts
// with the error in status.lastError and a Warning event; the item stays until a
// delete succeeds, and then the Tombstone goes. (The backoff between retries is
// tombstone_backoff_test.go's.)
func TestTombstoneRetry(t *testing.T) {
	t.Parallel()
	e := newExternalItems(t)
	e.domain.FailDeletes(testplugin.ErrInjected)
	_, ts := e.orphan(t, "ext-retry", "1s")

	var failed *limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur, err := getTombstone(&ts)
		if err != nil {
			return err
		}
		if cur.Status.Attempts < 2 || !strings.Contains(cur.Status.LastError, "injected failure") {
			return fmt.Errorf("status = %+v, want attempts ≥ 2 and lastError saying \"injected failure\"", cur.Status)
		}
		failed = cur
		return nil
	})
	if !e.domain.Exists("orphan") {
		t.Fatal("the item is gone although every delete failed")
	}
	// An attempt is counted before its delete is called: the last one may be in
	// flight still.
	if n := e.domain.Deletes("orphan"); int32(n) < failed.Status.Attempts-1 {
		t.Errorf("status.attempts = %d, but only %d delete calls", failed.Status.Attempts, n)
	}
	if failed.Status.DeleteAfter == nil {
		t.Error("status.deleteAfter is not set")
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var list corev1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(e.ns)); err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == "Tombstone" && ev.InvolvedObject.Name == ts.Name && ev.Type == corev1.EventTypeWarning &&
				ev.Reason == "DeleteFailed" && strings.Contains(ev.Message, "injected failure") {
				return nil
			}
		}
		return fmt.Errorf("no Warning DeleteFailed event on Tombstone %s", ts.Name)
	})

	// The backend recovers: the next retry deletes the item, the Tombstone goes.
	e.domain.FailDeletes(nil)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if e.domain.Exists("orphan") {
			return fmt.Errorf("item still exists after %d delete calls", e.domain.Deletes("orphan"))
		}
		return noTombstones(t, e.ns)()
	})
	if err := e.untouched("keep")(); err != nil {
		t.Error(err)
	}
}
