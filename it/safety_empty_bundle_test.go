package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A render bug that applies `resources: []` deletes nothing: the Bundle is
// Stalled (EmptyBundle) and lists what it keeps; spec.allowEmpty lets the
// deletions (and delays) proceed.
func TestEmptyBundleDeletesNothing(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "shop",
		objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil)),
		objectResource(t, "data", configMap("data", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})),
	)
	waitReady(t, b)

	updateBundle(t, b) // resources: []
	const msg = "the spec has no resources but the Bundle still manages objects: nothing is deleted; set spec.allowEmpty: true to delete them"
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionMessageIs(cur, "Stalled", metav1.ConditionTrue, "EmptyBundle", msg); err != nil {
			return err
		}
		if err := conditionIs(cur, "Ready", metav1.ConditionFalse, "EmptyBundle"); err != nil {
			return err
		}
		if len(cur.Status.PendingDeletions) != 2 {
			return fmt.Errorf("pendingDeletions = %+v, want config and data", cur.Status.PendingDeletions)
		}
		for _, pd := range cur.Status.PendingDeletions {
			if pd.DeleteAfter != nil || pd.Message != "not deleted: the Bundle's spec has no resources; set spec.allowEmpty: true to delete what it manages" {
				return fmt.Errorf("pending entry %+v: want no deadline and the allowEmpty message", pd)
			}
		}
		return nil
	})
	testenv.Consistently(t, 3*time.Second, func() error {
		for _, name := range []string{"config", "data"} {
			o := getObject(t, configMapGVK, ns, name)
			if o == nil || o.GetDeletionTimestamp() != nil {
				return fmt.Errorf("%s was deleted by an empty spec", name)
			}
			if _, stamped := o.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
				return fmt.Errorf("%s was stamped by an empty spec", name)
			}
		}
		return nil
	})

	// The user means it.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		cur.Spec.AllowEmpty = true
		return env.Client.Update(context.Background(), &cur)
	})
	testenv.Eventually(t, testenv.DefaultTimeout, noObject(configMapGVK, ns, "config"))
	waitInLimbo(t, configMapGVK, ns, "data")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionIs(cur, "Ready", metav1.ConditionTrue, "Ready"); err != nil {
			return err
		}
		if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "data" || cur.Status.PendingDeletions[0].DeleteAfter == nil {
			return fmt.Errorf("pendingDeletions = %+v, want data with its deadline", cur.Status.PendingDeletions)
		}
		return nil
	})
}
