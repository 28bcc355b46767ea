package it

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// wakeDeadline bounds how long a Bundle waiting to adopt an object takes to
// act once the Bundle that controlled the object lets it go: less than the
// 30 s recheck of objects in the way, so that only the object's own event can
// have woken it.
const wakeDeadline = 20 * time.Second

// A Bundle that declares an object to adopt it while another Bundle controls it
// (ControlledByOther) is woken by the object's own change when that Bundle is
// deleted: it adopts the object its teardown released, or creates the object
// in place of the one --cascade=foreground deleted, at once. Before, nothing
// woke it (the object's label names the other Bundle): it waited for its 30 s
// recheck.
func TestAdopterWokenWhenTheControllerLetsGo(t *testing.T) {
	for _, tc := range []struct {
		cascade metav1.DeletionPropagation
		// kept: the object is adopted as it was, not made anew.
		kept bool
	}{
		{metav1.DeletePropagationBackground, true},
		{metav1.DeletePropagationForeground, false},
	} {
		t.Run(string(tc.cascade), func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			app := configMap("app", map[string]any{"a": "b"}, nil)
			old := waitReady(t, createBundle(t, ns, "old", objectResource(t, "app", app)))
			uid := getObject(t, configMapGVK, ns, "app").GetUID()
			b := createBundle(t, ns, "new", objectResource(t, "app", withAnnotations(app, map[string]any{limbov1alpha1.AnnotationAdopt: "true"})))
			waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
				return resourceIs(cur, "app", limbov1alpha1.ResourceError, "ControlledByOther")
			})

			deleteBundle(t, old, tc.cascade)
			waitBundleGone(t, old)
			testenv.Eventually(t, wakeDeadline, func() error {
				o := getObject(t, configMapGVK, ns, "app")
				switch {
				case o == nil:
					return fmt.Errorf("app does not exist")
				case tc.kept && o.GetUID() != uid:
					return fmt.Errorf("app was made anew")
				case metav1.GetControllerOf(o) == nil || metav1.GetControllerOf(o).UID != getBundle(t, b).UID:
					return fmt.Errorf("app is not Bundle new's: owners %v", o.GetOwnerReferences())
				}
				return nil
			})
		})
	}
}
