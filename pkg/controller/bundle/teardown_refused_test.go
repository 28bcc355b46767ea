package bundle

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A teardown wave whose deletes keep failing (a webhook refusing them) is tried
// again as long after as it has been failing, from 2 s up to a minute: every
// object's read and DELETE every 2 s, for good, took the client budget every
// tenant shares.
func TestTeardownRefusedDeletesBackOff(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "db")}, limbov1alpha1.BundleStatus{})
	f := newTeardownFixture(t, b, nil, bundleConfigMap("db", nil))
	deletes := 0
	f.r.Engine.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		deletes++
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("denied by webhook"))
	}})
	reconcile := func() time.Duration {
		t.Helper()
		res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res.RequeueAfter
	}
	if after := reconcile(); after != teardownInterval || deletes != 1 {
		t.Fatalf("the first refusal: requeue after %v (%d deletes), want %v", after, deletes, teardownInterval)
	}
	failingSince := func(ago time.Duration) {
		t.Helper()
		var cur limbov1alpha1.Bundle
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, limbov1alpha1.ConditionDeletionFailure)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != limbov1alpha1.ReasonDeleteFailed {
			t.Fatalf("DeletionFailure = %+v, want True, %s", c, limbov1alpha1.ReasonDeleteFailed)
		}
		c.LastTransitionTime = metav1.NewTime(time.Now().Add(-ago))
		if err := f.c.Status().Update(context.Background(), &cur); err != nil {
			t.Fatal(err)
		}
		f.r.statuses.Forget(client.ObjectKeyFromObject(b))
	}
	failingSince(20 * time.Second)
	if after := reconcile(); after < 19*time.Second || after > 21*time.Second {
		t.Errorf("failing for 20 s: requeue after %v, want about 20 s", after)
	}
	failingSince(time.Hour)
	if after := reconcile(); after != maxFailingRetry {
		t.Errorf("failing for an hour: requeue after %v, want %v", after, maxFailingRetry)
	}
}
