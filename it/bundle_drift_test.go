package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// driftDeadline bounds how long a drift may last: the object's change is a watch
// event that triggers its Bundle, so correction is a matter of a second, far from
// any resync (30 minutes) or recheck interval (30 seconds). The bound leaves room
// for a loaded machine and stays under the recheck, so that only the event can
// meet it.
const driftDeadline = 25 * time.Second

// An external edit of what limbo set (kubectl edit, a PUT by another client) is
// reverted promptly, event-driven; what limbo does not set is left alone.
func TestDriftCorrected(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "drift",
		objectResource(t, "settings", configMap("settings", map[string]any{"mode": "safe", "level": "1"}, map[string]any{"team": "a"})))
	waitReady(t, b)
	original := getObject(t, configMapGVK, ns, "settings")

	edit := func(t *testing.T, change func(u *unstructured.Unstructured)) {
		t.Helper()
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			u := getObject(t, configMapGVK, ns, "settings")
			change(u)
			return env.Client.Update(context.Background(), u)
		})
	}
	corrected := func(t *testing.T, check func(u *unstructured.Unstructured) error) {
		t.Helper()
		testenv.Eventually(t, driftDeadline, func() error { return check(getObject(t, configMapGVK, ns, "settings")) })
	}
	wantData := func(u *unstructured.Unstructured) error {
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		if data["mode"] != "safe" || data["level"] != "1" {
			return fmt.Errorf("data = %v, want mode=safe level=1 restored", data)
		}
		return nil
	}

	t.Run("changed value", func(t *testing.T) {
		edit(t, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "unsafe", "data", "mode")
		})
		corrected(t, wantData)
	})
	t.Run("removed field", func(t *testing.T) {
		edit(t, func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "data", "level") })
		corrected(t, wantData)
	})
	t.Run("removed annotation", func(t *testing.T) {
		edit(t, func(u *unstructured.Unstructured) { u.SetAnnotations(nil) })
		corrected(t, func(u *unstructured.Unstructured) error {
			if u.GetAnnotations()["team"] != "a" {
				return fmt.Errorf("annotations = %v, want team=a restored", u.GetAnnotations())
			}
			return nil
		})
	})
	t.Run("removed label", func(t *testing.T) {
		// The object falls out of limbo's label-selected cache: the watch sees that
		// as a deletion, which still maps to the Bundle; the object is still
		// controlled by the Bundle, so limbo manages it and labels it again.
		edit(t, func(u *unstructured.Unstructured) {
			labels := u.GetLabels()
			delete(labels, limbov1alpha1.LabelBundle)
			u.SetLabels(labels)
		})
		bundle := getBundle(t, b)
		corrected(t, func(u *unstructured.Unstructured) error { return isControlledBy(u, bundle) })
	})
	t.Run("removed owner reference", func(t *testing.T) {
		// Still labelled with the Bundle's name and without a controller: limbo
		// takes it back.
		edit(t, func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) })
		bundle := getBundle(t, b)
		corrected(t, func(u *unstructured.Unstructured) error { return isControlledBy(u, bundle) })
	})

	final := getObject(t, configMapGVK, ns, "settings")
	if err := wantData(final); err != nil {
		t.Error(err)
	}
	if final.GetUID() != original.GetUID() {
		t.Errorf("the object was re-created (uid %s, was %s): drift is corrected in place", final.GetUID(), original.GetUID())
	}
	waitReady(t, b)
}

// A managed object deleted behind limbo's back (kubectl delete) is re-created
// promptly: its deletion is a watch event of its Bundle.
func TestDeletedObjectRecreated(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "recreate",
		objectResource(t, "settings", configMap("settings", map[string]any{"mode": "safe"}, nil)))
	waitReady(t, b)
	old := getObject(t, configMapGVK, ns, "settings")
	deleteObject(t, old)
	bundle := getBundle(t, b)
	testenv.Eventually(t, driftDeadline, func() error {
		u := getObject(t, configMapGVK, ns, "settings")
		if u == nil || u.GetUID() == old.GetUID() {
			return fmt.Errorf("ConfigMap settings not re-created yet")
		}
		if got := stringField(u, "data", "mode"); got != "safe" {
			return fmt.Errorf("data.mode = %q, want safe", got)
		}
		return isControlledBy(u, bundle)
	})
	waitReady(t, b)
}

// Another writer that keeps changing a field limbo sets (an autoscaler, another
// operator) is a fight neither side ends: limbo keeps putting the field back, and
// says so once, naming the writer (docs/user-guide.md "Fields other controllers
// set").
func TestDriftFightIsReported(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "fight", objectResource(t, "settings", configMap("settings", map[string]any{"mode": "safe"}, nil)))
	waitReady(t, b)
	for i := range 3 {
		patch := []byte(fmt.Sprintf(`{"data":{"mode":"theirs-%d"}}`, i))
		if err := env.Client.Patch(context.Background(), getObject(t, configMapGVK, ns, "settings"), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("fighter")); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, driftDeadline, func() error {
			if mode := stringField(getObject(t, configMapGVK, ns, "settings"), "data", "mode"); mode != "safe" {
				return fmt.Errorf("data.mode = %q, want safe put back", mode)
			}
			return nil
		})
	}
	waitEventContaining(t, b, "Warning", limbov1alpha1.EventDriftRepeated,
		`resource "settings": ConfigMap "settings" had fields limbo sets changed 3 times in 10m0s (by fighter), and put back each time`)
	if n := countEvents(t, b, "Warning", limbov1alpha1.EventDriftRepeated); n != 1 {
		t.Errorf("%d DriftRepeated events, want 1", n)
	}
}
