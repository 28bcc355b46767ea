package bundle

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A teardown pass that fails before it gets to write its status (the Bundle's
// objects may not be listed: RBAC narrowed, an aggregated API down) says so in
// DeletionFailure, and once in a Warning event: the Bundle stayed Terminating
// with no condition and no event, the cause in the controller's log only.
func TestTeardownFailureIsReported(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "db")}, limbov1alpha1.BundleStatus{})
	f := newTeardownFixture(t, b, nil, bundleConfigMap("db", nil))
	rec := record.NewFakeRecorder(100)
	f.r.Recorder, f.r.Engine.Recorder = rec, rec
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if gvk, err := c.GroupVersionKindFor(list); err == nil && gvk.Kind == "ConfigMapList" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("limbo may not list configmaps"))
		}
		return c.List(ctx, list, opts...)
	}})
	for range 3 {
		if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil {
			t.Fatal("Reconcile: no error for a teardown that cannot list the Bundle's objects")
		}
	}
	c := meta.FindStatusCondition(f.status(t).Conditions, limbov1alpha1.ConditionDeletionFailure)
	if c == nil || c.Status != "True" || c.Reason != limbov1alpha1.ReasonTeardownFailed || !strings.Contains(c.Message, "limbo may not list configmaps") {
		t.Errorf("DeletionFailure = %+v, want True, %s, with the cause", c, limbov1alpha1.ReasonTeardownFailed)
	}
	close(rec.Events)
	n := 0
	for e := range rec.Events {
		if strings.HasPrefix(e, "Warning "+limbov1alpha1.ReasonTeardownFailed+" ") && strings.Contains(e, "limbo may not list configmaps") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d TeardownFailed events over three passes failing alike, want 1", n)
	}
}
