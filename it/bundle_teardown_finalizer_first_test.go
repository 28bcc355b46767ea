package it

import (
	"net/http"
	"slices"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle that lacks the teardown finalizer when limbo first sees it (no
// admission policy on the cluster) gets it before limbo creates anything for it
// (docs/design-decisions.md, "The teardown finalizer is set at admission"): an
// object created first could be left behind by a delete of the Bundle in
// between, with no ordered teardown and no soft delete.
//
// Not parallel: it restarts the controller, so that the Bundle is created and
// stripped of the finalizer the admission policy set before any pass sees it,
// and reads the controller's request log.
func TestBundleTeardownFinalizerBeforeFirstObject(t *testing.T) {
	ns := env.Namespace(t)
	var b *limbov1alpha1.Bundle
	if err := env.RestartController(func() {
		b = createBundle(t, ns, "fresh", objectResource(t, "settings", configMap("settings", map[string]any{"k": "v"}, nil)))
		stripTeardownFinalizer(t, b)
		env.ResetControllerRequests()
	}); err != nil {
		t.Fatal(err)
	}
	ready := waitReady(t, b)
	if !slices.Contains(ready.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("finalizers %v, want %s", ready.Finalizers, limbov1alpha1.FinalizerTeardown)
	}

	bundlePath := "/apis/" + limbov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/bundles/" + b.Name
	writes := env.ControllerRequests(testenv.Writes, testenv.InNamespace(ns), testenv.NotResource("events"))
	finalizer := slices.IndexFunc(writes, func(r testenv.Request) bool { return r.Method == http.MethodPatch && r.Path == bundlePath })
	object := slices.IndexFunc(writes, func(r testenv.Request) bool { return r.Resource() == "configmaps" })
	switch {
	case finalizer < 0:
		t.Errorf("no PATCH of the Bundle (its finalizer); writes:%s", testenv.FormatRequests(writes))
	case object < 0:
		t.Errorf("no write of ConfigMap settings; writes:%s", testenv.FormatRequests(writes))
	case object < finalizer:
		t.Errorf("ConfigMap settings was written before the Bundle had its finalizer; writes:%s", testenv.FormatRequests(writes))
	}
}
