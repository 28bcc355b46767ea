package it

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// `kubectl delete` of an object in limbo deletes it at once, whatever its deadline;
// nothing else is needed: no error, no Warning, and the Bundle's pendingDeletions
// forgets it.
func TestSoftDeleteForceWithKubectlDelete(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "force", keep,
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})))
	b = waitReady(t, b)

	updateBundle(t, b, keep)
	waitInLimbo(t, configMapGVK, ns, "db")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "db" {
			return fmt.Errorf("pendingDeletions = %+v, want db", cur.Status.PendingDeletions)
		}
		return nil
	})

	// What kubectl delete sends: a DELETE with background propagation.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	u.SetNamespace(ns)
	u.SetName("db")
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	if err := env.Client.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatalf("kubectl delete configmap db: %v", err)
	}
	if getObject(t, configMapGVK, ns, "db") != nil {
		t.Fatal("db still exists right after the delete: something holds it")
	}

	cur := noPendingDeletions(t, b)
	if err := conditionIs(cur, "Ready", metav1.ConditionTrue, ""); err != nil {
		t.Error(err)
	}
	// The Bundle neither re-creates what it no longer declares nor complains.
	testenv.Consistently(t, 2*time.Second, noObject(configMapGVK, ns, "db"))
	for _, e := range events(t, b) {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("Warning event after the forced delete: %s: %s", e.Reason, e.Message)
		}
	}
	if getObject(t, configMapGVK, ns, "keep") == nil {
		t.Error("keep was deleted")
	}
}
