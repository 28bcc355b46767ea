package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// `kubectl limbo cancel` landing just before the deadline wins: the object is
// kept, out of limbo and out of its Bundle's hands, and the Bundle lists nothing.
//
// As in TestRaceDelayRaisedBeforeDeadline, an interceptor of the controller's
// requests runs the real kubectl-limbo binary once the object is due: ahead of
// the controller's first request about it (its cached copy, still controlled
// and due, is then stale: the fresh read must see that the Bundle no longer
// controls it), or between its fresh read and its DELETE (the resourceVersion
// precondition must refuse the delete). Deleting the cached copy with a UID
// precondition only deletes the cancelled object in both cases.
func TestRaceCancelBeforeDeadline(t *testing.T) {
	t.Parallel()
	k := newKubectlLimbo(t)
	forEachRacePoint(t, func(t *testing.T, ns string, point racePoint) {
		b, keep, uid := countdownBundle(t, ns)
		race := raceConfigMapDelete(t, ns, "db", point, nil, func(ctx context.Context) error {
			out, err := k.command(ctx, k.bin, "cancel", "configmap/db", "-n", ns, "--kubeconfig", env.Cluster.KubeconfigPath).CombinedOutput()
			if err != nil {
				return fmt.Errorf("kubectl limbo cancel configmap/db: %v\n%s", err, out)
			}
			return nil
		})

		updateBundle(t, b, keep)
		race.wait(t, nil)

		noPendingDeletions(t, b)
		kept := waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
			if string(u.GetUID()) != uid {
				return fmt.Errorf("db has uid %s, want %s", u.GetUID(), uid)
			}
			if owner := metav1.GetControllerOf(u); owner != nil {
				return fmt.Errorf("db is still controlled by %+v", owner)
			}
			return notInLimbo(u)
		})
		if got := kept.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; got != raceDelay {
			t.Errorf("the cancel lost the delay: %q", got)
		}
		race.checkDecidedOnFreshRead(t, point)
		testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))
	})
}
