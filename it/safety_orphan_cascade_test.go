package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// `kubectl delete bundle --cascade=orphan` deletes nothing, not even later: an
// object whose countdown was running when its Bundle went keeps living (the
// garbage collector leaves it without a controller, which the reaper would take
// for a released object if it were still stamped).
func TestOrphanCascadeStopsCountdowns(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "shop", keep,
		objectResource(t, "leaving", configMap("leaving", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "6s"})))
	waitReady(t, b)
	updateBundle(t, b, keep)
	_, stamp := waitInLimbo(t, configMapGVK, ns, "leaving")
	deadline := stamp.Add(6 * time.Second)

	deleteBundleWithPolicy(t, b, metav1.DeletePropagationOrphan)
	waitBundleDeleted(t, b)
	leaving := waitObject(t, configMapGVK, ns, "leaving", notInLimbo)
	testenv.Consistently(t, time.Until(deadline)+3*time.Second, func() error {
		o := getObject(t, configMapGVK, ns, "leaving")
		if o == nil || o.GetDeletionTimestamp() != nil {
			return fmt.Errorf("leaving was deleted after --cascade=orphan")
		}
		if o.GetUID() != leaving.GetUID() {
			return fmt.Errorf("leaving was replaced")
		}
		return nil
	})
}
