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
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	domain.FailDeletes(testplugin.ErrInjected)
	b := createBundle(t, ns, "ext-retry", pluginResource("items", ns, "1s"))
	waitReady(t, b)
	ts := waitOneTombstone(t, ns, "orphan")

	get := func() (*limbov1alpha1.Tombstone, error) {
		var cur limbov1alpha1.Tombstone
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(&ts), &cur)
		return &cur, err
	}
	// The first failure.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur, err := get()
		if err != nil {
			return err
		}
		if cur.Status.Attempts < 1 {
			return fmt.Errorf("status.attempts = %d", cur.Status.Attempts)
		}
		return nil
	})
	var failed *limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		cur, err := get()
		if err != nil {
			return err
		}
		if cur.Status.Attempts < 2 || !strings.Contains(cur.Status.LastError, "injected failure") {
			return fmt.Errorf("status = %+v, want attempts ≥ 2 and lastError saying \"injected failure\"", cur.Status)
		}
		failed = cur
		return nil
	})
	if !domain.Exists("orphan") {
		t.Fatal("the item is gone although every delete failed")
	}
	if n := domain.Deletes("orphan"); int32(n) < failed.Status.Attempts {
		t.Errorf("status.attempts = %d, but only %d delete calls", failed.Status.Attempts, n)
	}
	if failed.Status.DeleteAfter == nil {
		t.Error("status.deleteAfter is not set")
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var list corev1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Tombstone" && e.InvolvedObject.Name == ts.Name && e.Type == corev1.EventTypeWarning &&
				e.Reason == "DeleteFailed" && strings.Contains(e.Message, "injected failure") {
				return nil
			}
		}
		return fmt.Errorf("no Warning DeleteFailed event on Tombstone %s", ts.Name)
	})

	// The backend recovers: the next retry deletes the item, the Tombstone goes.
	domain.FailDeletes(nil)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if domain.Exists("orphan") {
			return fmt.Errorf("item still exists after %d delete calls", domain.Deletes("orphan"))
		}
		return noTombstones(t, ns)()
	})
	if !domain.Exists("keep") || domain.Deletes("keep") != 0 {
		t.Error("the desired item was touched")
	}
}
