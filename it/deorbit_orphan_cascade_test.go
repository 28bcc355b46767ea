package it

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// `kubectl delete bundle --cascade=orphan` promises that nothing is deleted:
// deorbit does not run, the target keeps everything, unmarked.
// `--cascade=foreground` is "everything now", the garbage collector's: limbo's
// teardown, plugin teardowns included, does not run either
// (docs/plugins/deorbit.md, docs/design-decisions.md).
func TestDeorbitSkippedByOrphanCascade(t *testing.T) {
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			ns := env.Namespace(t)
			w := newWorkload(t, ns)
			claim, _ := w.volume("data", csiDriver, true)
			lb := w.service("lb", corev1.ServiceTypeLoadBalancer)
			b := deorbitBundle(t, ns, "0s", nil)
			waitArmed(t, b, "armed: 1 PVC, 1 LoadBalancer Service")

			deleteBundle(t, b, policy)
			waitBundleGone(t, b)
			for _, o := range []client.Object{claim, lb} {
				if err := w.untouched(o); err != nil {
					t.Error(err)
				}
			}
			for _, reason := range []string{deorbit.EventDeorbitDone, deorbit.EventDeorbitDeleted, deorbit.EventDeorbitTimedOut} {
				if n := len(eventsWith(t, b, reason, "")); n != 0 {
					t.Errorf("%d %s events", n, reason)
				}
			}
		})
	}
}
