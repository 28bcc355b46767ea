package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// At teardown deorbit's items in the second cluster are stamped with the
// resource's deletionDelay and listed in pendingDeletions, naming the cluster;
// they are deleted at the deadline, not before.
func TestDeorbitHonoursDeletionDelay(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	claim, volume := w.volume("data", csiDriver, true)
	b := deorbitBundle(t, ns, "8s", nil)
	waitArmed(t, b, "armed: 1 PVC")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	var entry limbov1alpha1.PendingDeletion
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		for _, pd := range cur.Status.PendingDeletions {
			if pd.Kind == "PersistentVolumeClaim" && pd.Name == "data" && pd.DeleteAfter != nil {
				entry = pd
				return nil
			}
		}
		return fmt.Errorf("pendingDeletions %+v lack the PVC with a deadline", cur.Status.PendingDeletions)
	})
	if entry.Cluster != "workload-kubeconfig" || entry.Namespace != ns || entry.Resource != deorbitResource {
		t.Errorf("pendingDeletions entry %+v; want cluster workload-kubeconfig, namespace %s, resource %s", entry, ns, deorbitResource)
	}
	if d := entry.DeleteAfter.Sub(entry.DeletionTimestamp.Time); d != 8*time.Second {
		t.Errorf("deadline %v after the stamp, want 8s", d)
	}
	live := claim.DeepCopy()
	if !w.get(live) || live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "" || live.Labels[limbov1alpha1.LabelPendingDeletion] != "true" {
		t.Fatalf("the remote PVC is not stamped: %v %v", live.Annotations, live.Labels)
	}
	stamp, err := time.Parse(time.RFC3339, live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	deadline := stamp.Add(8 * time.Second)
	// Until the deadline the claim stays, not terminating.
	if until := time.Until(deadline) - time.Second; until > 0 {
		testenv.Consistently(t, until, func() error { return w.untouchedButStamped(claim) })
	}
	w.waitGone(claim)
	w.playProvisioner(volume)
	waitEventContaining(t, b, corev1.EventTypeNormal, limbov1alpha1.EventDeleted, "PersistentVolumeClaim "+ns+"/data in cluster workload-kubeconfig deleted")
	waitBundleGone(t, b)
}
