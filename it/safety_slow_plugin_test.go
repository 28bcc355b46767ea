package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A hanging plugin never delays another resource's deadline in the same Bundle:
// while the plugin resource's Plan hangs (until the plugin call timeout), an
// object removed from the Bundle is stamped, deleted at its deadline, and the
// Bundle's status follows the edit — all before the hanging Plan returns.
//
// The yardstick is the hang itself (hang), not a time target: the deadline falls
// inside the hang, and the deletion must be seen while the very Plan that began
// hanging before the deadline still hangs. A pass that waits for its plugins
// would stamp the object only once the Plan gave up, after plugin.CallTimeout.
func TestHangingPluginDoesNotDelayDeadlines(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("kept", true)
	t.Cleanup(func() { domain.Unblock(testplugin.PlanCall) })
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	items := pluginResource("items", ns, "1h")
	// Long enough that db is still in limbo when waitInLimbo, which starts only
	// once the hang is seen, looks for it under load (the stamp is rounded to the
	// second); short enough that the deadline, the delete and the status update
	// all fall well inside the hang (plugin.CallTimeout, 30 s).
	const delay = 10 * time.Second
	db := objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()}))
	b := createBundle(t, ns, "shop", keep, items, db)
	waitReady(t, b)
	gone := watchConfigMapDeletion(t, ns, "db")

	domain.Block(testplugin.PlanCall)
	updateBundle(t, b, keep, items)
	h := waitHang(t, domain, testplugin.PlanCall, 1, 0)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	deadline := stamp.Add(delay)
	if !deadline.After(h.since) {
		t.Fatalf("db's deadline %s is not inside the hang, which began at %s", deadline, h.since)
	}

	at := gone.wait(t, plugin.CallTimeout+30*time.Second)
	if at.Before(deadline) {
		t.Errorf("db was deleted at %s, before its deadline %s", at, deadline)
	}
	h.still(t, fmt.Sprintf("db was deleted %v after its deadline,", at.Sub(deadline)))
	// The Bundle's status follows the edit meanwhile.
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions = %+v after db was deleted", cur.Status.PendingDeletions)
		}
		if len(cur.Status.Resources) != 2 {
			return fmt.Errorf("resources = %+v, want keep and items", cur.Status.Resources)
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
	h.still(t, "the status followed the edit")

	domain.Unblock(testplugin.PlanCall)
	waitReady(t, b)
}
