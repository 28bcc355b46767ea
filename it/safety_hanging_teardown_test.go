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

// Hanging plugin teardowns never hold the Bundle workers: while as many Bundles as
// the controller has workers are torn down by a plugin whose Teardown hangs (a
// deorbit whose dying cluster no longer answers, until the plugin call timeout),
// an object removed from another Bundle is stamped and deleted at its deadline,
// and each dying Bundle says its teardown call is running — all before any of the
// hanging calls returns.
//
// The yardstick is the hang itself: a pass that waited for its Teardown would
// hold every worker until the calls gave up, after plugin.CallTimeout.
func TestHangingTeardownsDoNotHoldWorkers(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	t.Cleanup(func() { domain.Unblock(testplugin.TeardownCall) })
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	const delay = 3 * time.Second
	db := objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()}))
	shop := createBundle(t, ns, "shop", keep, db)
	workers := env.ControllerOptions().Workers
	var dying []*limbov1alpha1.Bundle
	for i := range workers {
		dying = append(dying, createBundle(t, ns, fmt.Sprintf("dying-%d", i), teardownResource("cluster", ns)))
	}
	for _, b := range append([]*limbov1alpha1.Bundle{shop}, dying...) {
		waitReady(t, b)
	}
	gone := watchConfigMapDeletion(t, ns, "db")

	domain.Block(testplugin.TeardownCall)
	for _, b := range dying {
		deleteBundle(t, b, metav1.DeletePropagationBackground)
	}
	h := waitHang(t, domain, testplugin.TeardownCall, workers, 0)

	updateBundle(t, shop, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	deadline := stamp.Add(delay)
	at := gone.wait(t, plugin.CallTimeout+30*time.Second)
	if at.Before(deadline) {
		t.Errorf("db was deleted at %s, before its deadline %s", at, deadline)
	}
	h.still(t, fmt.Sprintf("db was deleted %v after its deadline,", at.Sub(deadline)))
	for _, b := range dying {
		waitTeardown(t, b, "plugin resource cluster (its teardown call is running)")
	}
	h.still(t, "the dying Bundles said so")

	domain.Unblock(testplugin.TeardownCall)
	for _, b := range dying {
		waitBundleGone(t, b)
	}
}

// teardownResource is a Bundle resource running the test plugin's twin with a
// teardown on domain.
func teardownResource(name, domain string) limbov1alpha1.Resource {
	res := pluginResource(name, domain, "1h")
	res.Plugin.Name = testplugin.TeardownName
	return res
}
