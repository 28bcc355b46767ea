package it

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// kubectl limbo expedite, pointed at the workload cluster, makes the deadline of
// one of deorbit's items now: deorbit deletes it on its next pass instead of an
// hour later.
func TestDeorbitExpediteInWorkloadCluster(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	claim, volume := w.volume("data", csiDriver, true)
	b := deorbitBundle(t, ns, "1h", nil)
	waitArmed(t, b, "armed: 1 PVC")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		live := claim.DeepCopy()
		if !w.get(live) || live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
			return fmt.Errorf("the claim is not stamped yet")
		}
		return nil
	})
	k := newKubectlLimbo(t)
	stdout, stderr, code := k.exec(t, k.bin, "expedite", "persistentvolumeclaim/data", "-n", ns, "--kubeconfig", w.remote.Cluster.KubeconfigPath)
	if code != 0 {
		t.Fatalf("kubectl limbo expedite in the workload cluster: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	w.waitGone(claim)
	waitEventContaining(t, b, corev1.EventTypeNormal, limbov1alpha1.EventDeleted, "PersistentVolumeClaim "+ns+"/data in cluster workload-kubeconfig deleted")
	w.playProvisioner(volume)
	waitBundleGone(t, b)
}
