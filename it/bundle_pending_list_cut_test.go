package it

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A Bundle with more in limbo than its status lists: the status is still
// written, lists the soonest MaxPendingDeletionsListed entries and counts them
// all (a status of thousands of entries passed the API server's object limit and
// could not be written at all). Declared again, every object leaves limbo,
// listed or not.
func TestPendingDeletionsListCut(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const n = limbov1alpha1.MaxPendingDeletionsListed + 20
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	many := configMapResources(t, "cm", n, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})
	b := waitReady(t, createBundle(t, ns, "big", append([]limbov1alpha1.Resource{keep}, many...)...))

	updateBundle(t, b, keep)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		st := &cur.Status
		if st.PendingDeletionCount != n || len(st.PendingDeletions) != limbov1alpha1.MaxPendingDeletionsListed || st.NextDeletion == nil {
			return fmt.Errorf("pendingDeletions lists %d, counts %d, next %v; want %d listed of %d", len(st.PendingDeletions), st.PendingDeletionCount, st.NextDeletion, limbov1alpha1.MaxPendingDeletionsListed, n)
		}
		return nil
	})
	var stamped corev1.ConfigMapList
	if err := env.Client.List(context.Background(), &stamped, client.InNamespace(ns), client.MatchingLabels{limbov1alpha1.LabelPendingDeletion: "true"}); err != nil {
		t.Fatal(err)
	}
	if len(stamped.Items) != n {
		t.Fatalf("%d ConfigMaps in limbo, want %d", len(stamped.Items), n)
	}

	updateBundle(t, b, append([]limbov1alpha1.Resource{keep}, many...)...)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if cur.Status.PendingDeletionCount != 0 || len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions lists %d, counts %d, want none", len(cur.Status.PendingDeletions), cur.Status.PendingDeletionCount)
		}
		return nil
	})
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var left corev1.ConfigMapList
		if err := env.Client.List(context.Background(), &left, client.InNamespace(ns), client.MatchingLabels{limbov1alpha1.LabelPendingDeletion: "true"}); err != nil {
			return err
		}
		if len(left.Items) != 0 {
			return fmt.Errorf("%d ConfigMaps still in limbo, %s among them", len(left.Items), left.Items[0].Name)
		}
		return nil
	})
}
