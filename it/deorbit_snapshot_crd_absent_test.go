package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// Without the VolumeSnapshot CRD in the target (the original's every-pass
// failure), deorbit skips VolumeSnapshots, says so, and its teardown completes.
func TestDeorbitWithoutVolumeSnapshotCRD(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	claim, volume := w.volume("data", csiDriver, true)
	b := deorbitBundle(t, ns, "0s", map[string]any{"volumeSnapshots": true})
	waitArmed(t, b, "armed: 1 PVC, 0 LoadBalancer Services, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	w.waitGone(claim)
	w.playProvisioner(volume)
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 PVCs")
	waitBundleGone(t, b)
	if n := len(eventsWith(t, b, deorbit.EventDeorbitFailed, "")) + len(eventsWith(t, b, limbov1alpha1.EventDeleteFailed, "")); n != 0 {
		t.Errorf("%d failure events", n)
	}
}
