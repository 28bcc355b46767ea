package it

import (
	"encoding/json"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Helpers of the Tombstone tests.

// waitOneTombstone waits until the namespace holds exactly one Tombstone, for item
// id, and returns it.
func waitOneTombstone(t testing.TB, ns, id string) limbov1alpha1.Tombstone {
	t.Helper()
	var ts limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		list := tombstones(t, ns)
		if len(list) != 1 {
			return fmt.Errorf("%d tombstones, want 1", len(list))
		}
		ts = list[0]
		if ts.Spec.Item.ID != id || ts.Spec.Item.Kind != testplugin.ItemKind {
			return fmt.Errorf("tombstone for %s %q, want %s %q", ts.Spec.Item.Kind, ts.Spec.Item.ID, testplugin.ItemKind, id)
		}
		return nil
	})
	return ts
}

// orphanTombstone creates Bundle "shop" in ns with plugin resource "items" of
// delay, whose domain holds a desired item "keep" and an orphan "orphan", and
// waits for the orphan's Tombstone.
func orphanTombstone(t testing.TB, ns, delay string) (*testplugin.Domain, *limbov1alpha1.Bundle, limbov1alpha1.Tombstone) {
	t.Helper()
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	b := createBundle(t, ns, "shop", pluginResource("items", ns, delay))
	waitReady(t, b)
	return domain, b, waitOneTombstone(t, ns, "orphan")
}

// noTombstones fails while the namespace holds a Tombstone.
func noTombstones(t testing.TB, ns string) func() error {
	return func() error {
		if list := tombstones(t, ns); len(list) != 0 {
			names := make([]string, len(list))
			for i, ts := range list {
				names[i] = fmt.Sprintf("%s (item %s, finalizers %v, deleting %v)", ts.Name, ts.Spec.Item.ID, ts.Finalizers, ts.DeletionTimestamp != nil)
			}
			return fmt.Errorf("tombstones remain: %v", names)
		}
		return nil
	}
}

// itemUntouched fails when the item is gone or a delete was attempted.
func itemUntouched(d *testplugin.Domain, id string) func() error {
	return func() error {
		if !d.Exists(id) {
			return fmt.Errorf("item %q was deleted", id)
		}
		if n := d.Deletes(id); n != 0 {
			return fmt.Errorf("item %q: %d delete calls, want none", id, n)
		}
		return nil
	}
}

// replan makes the Bundle run its plugins again. The test plugin declares no watch
// and no poll interval (a real plugin's domain announces its changes, or is
// polled), so a change of the Bundle's spec is what triggers a new plan: here a
// field that the test plugin ignores, set to marker in every plugin resource's
// spec. It writes nothing else, so that no other event follows.
func replan(t testing.TB, b *limbov1alpha1.Bundle, resources []limbov1alpha1.Resource, marker string) []limbov1alpha1.Resource {
	t.Helper()
	out := make([]limbov1alpha1.Resource, len(resources))
	for i, r := range resources {
		out[i] = *r.DeepCopy()
		if r.Plugin == nil {
			continue
		}
		spec := map[string]any{}
		if err := json.Unmarshal(r.Plugin.Spec.Raw, &spec); err != nil {
			t.Fatal(err)
		}
		spec["replan"] = marker
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		out[i].Plugin.Spec = &apiextensionsv1.JSON{Raw: raw}
	}
	updateBundle(t, b, out...)
	return out
}
