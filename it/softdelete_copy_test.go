package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A copy of an object in limbo — restored from a backup taken during its
// countdown, re-created from `kubectl get -o yaml`, `kubectl replace --force` —
// carries its original's stamp. "A different object: the old countdown never
// deletes it" (docs/soft-delete.md): a countdown that ended before the copy was
// created restarts. It did not: the reaper deleted a released copy at once (a
// PersistentVolumeClaim restored to get its data back, and its volume with
// it), and a Bundle's pass a copy its Bundle controls.
func TestSoftDeleteCopyCountsDownAnew(t *testing.T) {
	t.Parallel()
	const oldStamp = "2020-01-01T00:00:00Z"
	copyOf := func(name string, labels map[string]any, annotations map[string]any) map[string]any {
		cm := configMap(name, map[string]any{"restored": "true"}, annotations)
		cm["metadata"].(map[string]any)["labels"] = labels
		return cm
	}
	countsDownAnew := func(t *testing.T, ns, name, uid string, created time.Time) {
		t.Helper()
		u := waitObject(t, configMapGVK, ns, name, func(u *unstructured.Unstructured) error {
			if got := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; got == oldStamp {
				return fmt.Errorf("%s still carries its original's stamp %s", name, got)
			}
			return nil
		})
		if string(u.GetUID()) != uid {
			t.Fatalf("%s has UID %s, want the copy's %s: deleted and made again?", name, u.GetUID(), uid)
		}
		stamp, err := time.Parse(time.RFC3339, u.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp])
		if err != nil {
			t.Fatalf("%s: stamp: %v", name, err)
		}
		if stamp.Before(created.Add(-time.Minute)) {
			t.Errorf("%s restamped at %s, before the copy was created (%s)", name, stamp, created)
		}
	}

	t.Run("released", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		u := createObject(t, ns, copyOf("claim",
			map[string]any{limbov1alpha1.LabelBundle: "gone", limbov1alpha1.LabelPendingDeletion: "true"},
			map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: oldStamp,
				limbov1alpha1.AnnotationReleased: oldStamp}))
		countsDownAnew(t, ns, "claim", string(u.GetUID()), u.GetCreationTimestamp().Time)
	})

	t.Run("controlled by its Bundle", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		b := waitReady(t, createBundle(t, ns, "shop", objectResource(t, "app", configMap("app", map[string]any{"a": "b"}, nil))))
		obj := copyOf("db",
			map[string]any{limbov1alpha1.LabelBundle: b.Name, limbov1alpha1.LabelPendingDeletion: "true"},
			map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: oldStamp})
		u := &unstructured.Unstructured{Object: obj}
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: b.Name, UID: b.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}})
		created := createObject(t, ns, u.Object)
		countsDownAnew(t, ns, "db", string(created.GetUID()), created.GetCreationTimestamp().Time)
		waitEventContaining(t, b, "Warning", limbov1alpha1.EventInvalidStamp, "ConfigMap "+ns+"/db", "counts down anew")
	})
}
