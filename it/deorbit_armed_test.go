package it

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
)

// While its Bundle lives, deorbit deletes nothing and reports what it would
// remove from the second cluster: the claims of the listed driver's PVs and the
// LoadBalancer Services, counted there; VolumeSnapshots are skipped, their CRD
// being absent.
func TestDeorbitArmedReport(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	a, _ := w.volume("a", csiDriver, true)
	b2, _ := w.volume("b", csiDriver, true)
	handMade, _ := w.volume("hand-made", csiDriver, false)
	lb := w.service("lb", corev1.ServiceTypeLoadBalancer)
	internal := w.service("internal", corev1.ServiceTypeClusterIP)

	b := deorbitBundle(t, ns, "0s", nil)
	cur := waitArmed(t, b, "armed: 2 PVCs, 1 LoadBalancer Service, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)")
	if msg := resourceStatus(cur, deorbitResource).Message; !strings.Contains(msg, "in the cluster of kubeconfig Secret workload-kubeconfig (https://") {
		t.Errorf("the armed report does not name the target: %q", msg)
	}
	testenv.Consistently(t, 3*time.Second, func() error {
		for _, o := range []client.Object{a, b2, handMade, lb, internal} {
			if err := w.untouched(o); err != nil {
				return err
			}
		}
		return nil
	})
}
