package it

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The Tombstone tests run the test plugin (external, in main_test.go) on a domain
// named after the test's namespace, so that tests never see each other's items
// and run in parallel.

// externalItems is one Tombstone test's world: its namespace and the test
// plugin's domain of the same name, which holds a desired item "keep" and an
// undesired one "orphan".
type externalItems struct {
	ns     string
	domain *testplugin.Domain
}

// newExternalItems makes a namespace and its domain, with items "keep" (desired)
// and "orphan" (not desired).
func newExternalItems(t testing.TB) *externalItems {
	t.Helper()
	ns := env.Namespace(t)
	domain := external.Domain(ns)
	domain.Set("keep", true)
	domain.Set("orphan", false)
	return &externalItems{ns: ns, domain: domain}
}

// resource is the Bundle resource "items", running the test plugin on the domain.
func (e *externalItems) resource(delay string) limbov1alpha1.Resource {
	return pluginResource("items", e.ns, delay)
}

// orphan creates the Bundle name with the resource "items" (after others),
// waits until it is Ready and returns it with the Tombstone of "orphan".
func (e *externalItems) orphan(t testing.TB, name, delay string, others ...limbov1alpha1.Resource) (*limbov1alpha1.Bundle, limbov1alpha1.Tombstone) {
	t.Helper()
	b := waitReady(t, createBundle(t, e.ns, name, append(others, e.resource(delay))...))
	return b, waitOneTombstone(t, e.ns, "orphan")
}

// untouched fails when an item is gone or a delete of it was attempted.
func (e *externalItems) untouched(ids ...string) func() error {
	return func() error {
		for _, id := range ids {
			if !e.domain.Exists(id) {
				return fmt.Errorf("item %q was deleted", id)
			}
			if n := e.domain.Deletes(id); n != 0 {
				return fmt.Errorf("item %q: %d delete calls, want none", id, n)
			}
		}
		return nil
	}
}

// pluginResource is a Bundle resource running the test plugin on domain.
func pluginResource(name, domain, delay string) limbov1alpha1.Resource {
	return limbov1alpha1.Resource{Name: name, Plugin: &limbov1alpha1.PluginResource{
		Name: testplugin.Name, DeletionDelay: delay, Spec: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"domain":%q}`, domain))},
	}}
}

// tombstones lists the namespace's Tombstones.
func tombstones(t testing.TB, ns string) []limbov1alpha1.Tombstone {
	t.Helper()
	var list limbov1alpha1.TombstoneList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// getTombstone reads the Tombstone's current state.
func getTombstone(ts *limbov1alpha1.Tombstone) (*limbov1alpha1.Tombstone, error) {
	var cur limbov1alpha1.Tombstone
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ts), &cur)
	return &cur, err
}

// waitAttempts waits until the Tombstone has recorded at least n failed deletes.
func waitAttempts(t testing.TB, ts *limbov1alpha1.Tombstone, n int32) *limbov1alpha1.Tombstone {
	t.Helper()
	var cur *limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var err error
		if cur, err = getTombstone(ts); err != nil {
			return err
		}
		if cur.Status.Attempts < n {
			return fmt.Errorf("status.attempts = %d, want at least %d (lastError %q)", cur.Status.Attempts, n, cur.Status.LastError)
		}
		return nil
	})
	return cur
}

// tombstoneItems describes a namespace's Tombstones for failure messages.
func tombstoneItems(t testing.TB, ns string) []string {
	var out []string
	for _, ts := range tombstones(t, ns) {
		out = append(out, fmt.Sprintf("%s(%s attempts=%d lastError=%q finalizers=%v deleting=%v)",
			ts.Name, ts.Spec.Item.Name, ts.Status.Attempts, ts.Status.LastError, ts.Finalizers, !ts.DeletionTimestamp.IsZero()))
	}
	return out
}

// waitOneTombstone waits until the namespace holds exactly one Tombstone, for item
// id, and returns it.
func waitOneTombstone(t testing.TB, ns, id string) limbov1alpha1.Tombstone {
	t.Helper()
	var ts limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		list := tombstones(t, ns)
		if len(list) != 1 {
			return fmt.Errorf("%d tombstones, want 1: %v", len(list), tombstoneItems(t, ns))
		}
		ts = list[0]
		if ts.Spec.Item.ID != id || ts.Spec.Item.Kind != testplugin.ItemKind {
			return fmt.Errorf("tombstone for %s %q, want %s %q", ts.Spec.Item.Kind, ts.Spec.Item.ID, testplugin.ItemKind, id)
		}
		return nil
	})
	return ts
}

// noTombstones fails while the namespace holds a Tombstone.
func noTombstones(t testing.TB, ns string) func() error {
	return func() error {
		if list := tombstones(t, ns); len(list) != 0 {
			return fmt.Errorf("tombstones remain: %v", tombstoneItems(t, ns))
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

// waitTombstoneCancelled waits until ts is gone (a new Tombstone of the same name,
// the same item judged again, may stand in its place) with a DeletionCancelled
// event on it whose message contains why.
func waitTombstoneCancelled(t testing.TB, ts *limbov1alpha1.Tombstone, why string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if cur, err := getTombstone(ts); err == nil && cur.UID == ts.UID {
			return fmt.Errorf("Tombstone %s is still there: %+v", ts.Name, cur.Status)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		for _, e := range tombstoneEvents(t, ts) {
			if e.Reason == limbov1alpha1.EventDeletionCancelled && strings.Contains(e.Message, why) {
				return nil
			}
		}
		return fmt.Errorf("no DeletionCancelled event on Tombstone %s with %q", ts.Name, why)
	})
}

// tombstoneEvents lists the events on Tombstones of ts's name (each Tombstone
// that had the name: the same item's).
func tombstoneEvents(t testing.TB, ts *limbov1alpha1.Tombstone) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ts.Namespace)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Tombstone" && e.InvolvedObject.Name == ts.Name {
			out = append(out, e)
		}
	}
	return out
}
