package it

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphan whose live limbo.dev/deletionDelay is invalid is never deleted: a
// Warning event InvalidDeletionDelay, the Bundle not Ready (reason
// InvalidDeletionDelay), and a pendingDeletions entry with the error. Fixing the
// annotation lets the countdown run.
func TestSoftDeleteInvalidDelayNeverDeletes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ delay, err string }{
		{"forever", `invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)`},
		{"-5m", `invalid limbo.dev/deletionDelay "-5m": must not be negative`},
	} {
		t.Run(tc.delay, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
			b := createBundle(t, ns, "invalid", keep, objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, nil)))
			b = waitReady(t, b)
			// The template is valid; the live object gets the invalid delay afterwards.
			annotateConfigMap(t, ns, "db", limbov1alpha1.AnnotationDeletionDelay, tc.delay)
			uid := string(getObject(t, configMapGVK, ns, "db").GetUID())

			updateBundle(t, b, keep)
			entry := tc.err + "; never deleted until fixed"
			cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
				if len(cur.Status.PendingDeletions) != 1 {
					return fmt.Errorf("pendingDeletions = %+v, want db", cur.Status.PendingDeletions)
				}
				return conditionMessageIs(cur, "Ready", metav1.ConditionFalse, "InvalidDeletionDelay",
					fmt.Sprintf("orphans with an invalid deletion delay are never deleted: ConfigMap \"db\": %s", entry))
			})
			pd := cur.Status.PendingDeletions[0]
			if pd.APIVersion != "v1" || pd.Kind != "ConfigMap" || pd.Namespace != ns || pd.Name != "db" ||
				pd.DeletionTimestamp != nil || pd.DeleteAfter != nil || pd.Message != entry {
				t.Errorf("pendingDeletions[0] = %+v, want ConfigMap db without deadline, message %q", pd, entry)
			}
			if err := conditionIs(cur, "Stalled", metav1.ConditionTrue, "InvalidDeletionDelay"); err != nil {
				t.Error(err)
			}
			if cur.Status.PendingDeletionCount != 1 || cur.Status.NextDeletion != nil {
				t.Errorf("pendingDeletionCount/nextDeletion = %d/%v, want 1/nil", cur.Status.PendingDeletionCount, cur.Status.NextDeletion)
			}
			waitEvent(t, b, corev1.EventTypeWarning, "InvalidDeletionDelay", fmt.Sprintf("ConfigMap %s/db is never deleted: %s", ns, tc.err))

			testenv.Consistently(t, 4*time.Second, func() error {
				if err := existsWithUID(t, configMapGVK, ns, "db", uid)(); err != nil {
					return err
				}
				return notInLimbo(getObjectOrEmpty(t, ns, "db"))
			})

			// Fixed: the countdown starts, the object goes, the Bundle is Ready.
			annotateConfigMap(t, ns, "db", limbov1alpha1.AnnotationDeletionDelay, "1s")
			waitGone(t, configMapGVK, ns, "db")
			waitReady(t, b)
			noPendingDeletions(t, b)
		})
	}
}

// A template with an invalid limbo.dev/deletionDelay is a spec error: the Bundle is
// Stalled, the resource names the error, and nothing is written or deleted — not
// even the object that the same edit removed from the Bundle.
func TestSoftDeleteInvalidDelayInTemplate(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "invalid-template", keep, objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, nil)))
	b = waitReady(t, b)
	keepUID := string(getObject(t, configMapGVK, ns, "keep").GetUID())

	updateBundle(t, b, objectResource(t, "db", configMap("db", map[string]any{"a": "c"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "tomorrow"})))
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionIs(cur, "Stalled", metav1.ConditionTrue, "InvalidSpec"); err != nil {
			return err
		}
		return resourceMessageIs(cur, "db", limbov1alpha1.ResourceError, "InvalidDeletionDelay",
			`object: invalid limbo.dev/deletionDelay "tomorrow": not a duration (Go syntax: 10m, 24h, 1h30m)`)
	})
	if err := conditionIs(cur, "Ready", metav1.ConditionFalse, "InvalidSpec"); err != nil {
		t.Error(err)
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		if err := existsWithUID(t, configMapGVK, ns, "keep", keepUID)(); err != nil {
			return err
		}
		if err := notInLimbo(getObjectOrEmpty(t, ns, "keep")); err != nil {
			return err
		}
		db := getObjectOrEmpty(t, ns, "db")
		if _, set := db.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; set || stringField(db, "data", "a") != "b" {
			return fmt.Errorf("db was written: %v", db.Object)
		}
		return nil
	})
}

// annotateConfigMap sets an annotation on a live ConfigMap, as a user would with
// kubectl annotate.
func annotateConfigMap(t testing.TB, ns, name, key, value string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	if err := env.Client.Patch(testenv.Context(t, testenv.DefaultTimeout), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotate %s: %v", name, err)
	}
}
