package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A teardown releases to the reaper, which deletes as limbo, only what the
// Bundle's ServiceAccount may delete itself: a tenant without delete must not
// get its objects deleted by annotating them with a delay and deleting the
// Bundle. The object stays the Bundle's, the teardown says why; granted delete,
// the teardown releases it and it goes at its deadline.
func TestImpersonationReleaseNeedsDelete(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	tenant(t, ns, "tenant", "get", "list", "watch", "create", "update", "patch") // no delete
	b := createBundleAs(t, ns, "tenant", "shop",
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1s"})))
	waitReady(t, b)
	uid := string(getObject(t, configMapGVK, ns, "db").GetUID())

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitEventContaining(t, b, corev1.EventTypeWarning, limbov1alpha1.EventDeleteFailed, "ConfigMap "+ns+"/db", "its Bundle's ServiceAccount may not delete it")
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		return conditionIs(getBundle(t, b), "DeletionFailure", metav1.ConditionTrue, "")
	})
	// Past its delay, still the Bundle's: never released.
	testenv.Consistently(t, 3*time.Second, func() error {
		o := getObject(t, configMapGVK, ns, "db")
		switch {
		case o == nil || string(o.GetUID()) != uid:
			return fmt.Errorf("db was deleted")
		case metav1.GetControllerOf(o) == nil:
			return fmt.Errorf("db was released: %v", o.GetAnnotations())
		}
		return nil
	})

	role := &rbacv1.Role{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tenant"}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	if err := env.Client.Update(context.Background(), role); err != nil {
		t.Fatal(err)
	}
	waitGone(t, configMapGVK, ns, "db")
	waitBundleGone(t, b)
}
