package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An object whose delay was made invalid by hand is released, unstamped, when
// its Bundle is deleted: a Warning says it is never deleted until fixed, it is
// kept, and once the delay is fixed the reaper stamps it and deletes it at its
// deadline. (It used to be released silently and never looked at again: the
// reaper took only stamped objects for released ones.)
func TestReaperReleasedWithInvalidDelay(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	// The delay is not the template's (limbo's apply would put its value back):
	// someone annotated the live object.
	b := createBundle(t, ns, "shop", objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, nil)))
	waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())
	patchObject(t, configMapGVK, ns, "db", fmt.Sprintf(`{"metadata":{"annotations":{%q:"forever"}}}`, limbov1alpha1.AnnotationDeletionDelay))

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	waitEventContaining(t, b, "Warning", limbov1alpha1.ReasonInvalidDeletionDelay, "ConfigMap "+ns+"/db released to limbo, never deleted until its delay is fixed")
	// Kept, not only at the moment of the release: the reaper, which takes
	// released objects over, leaves it alone too.
	testenv.Consistently(t, 3*time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))

	patchObject(t, configMapGVK, ns, "db", fmt.Sprintf(`{"metadata":{"annotations":{%q:"1s"}}}`, limbov1alpha1.AnnotationDeletionDelay))
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if o := getObject(t, configMapGVK, ns, "db"); o != nil && string(o.GetUID()) == uid {
			return fmt.Errorf("db is still there: annotations %v", o.GetAnnotations())
		}
		return nil
	})
}
