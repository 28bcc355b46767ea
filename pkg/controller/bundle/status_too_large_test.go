package bundle

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A status the API server refuses as too large (etcd's request limit, a Bundle
// near it) is written reduced — the resources' states and the pending count
// kept, their messages and most entries left out — with a Warning that says
// so. It was not written at all: the Bundle kept its last status, which the
// Tombstone controller's gate and the reaper believe (a Bundle shown Ready
// while a resource was not had its plugin's Tombstones executed), and nothing
// but the controller's log said why.
func TestStatusTooLargeIsWrittenReduced(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
		Spec:   limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{{Name: "app", State: limbov1alpha1.ResourceBlocked}}}}
	f := newTeardownFixture(t, b, nil)
	recorder := record.NewFakeRecorder(100)
	f.r.Recorder = recorder
	tooLarge := apierrors.NewInternalError(errors.New("etcdserver: request is too large"))
	refuse := func(obj client.Object) error {
		if b, ok := obj.(*limbov1alpha1.Bundle); ok {
			for _, rs := range b.Status.Resources {
				if rs.Message != "" || rs.AppliedDigest != "" {
					return tooLarge // the full status, with its messages and digests
				}
			}
		}
		return nil
	}
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	var specPassed bool // the reaper is told: what it leaves to the Bundle may be its own again
	f.r.OnSpecPassed = func(types.NamespacedName) { specPassed = true }
	_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	if !specPassed {
		t.Error("OnSpecPassed was not called for the reduced status of a new generation")
	}
	if err == nil {
		t.Error("Reconcile succeeded; want the refusal, retried with backoff")
	}
	st := f.status(t)
	if st.ObservedGeneration != 2 || len(st.Resources) != 1 || st.Resources[0].State != limbov1alpha1.ResourceReady {
		t.Errorf("status: generation %d, resources %+v; want the pass's: generation 2, app Ready", st.ObservedGeneration, st.Resources)
	}
	if c := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, "too large") {
		t.Errorf("Ready condition %+v; want its message to say the status was too large", c)
	}
	close(recorder.Events)
	var warned bool
	for ev := range recorder.Events {
		warned = warned || strings.HasPrefix(ev, "Warning "+limbov1alpha1.EventStatusTooLarge)
	}
	if !warned {
		t.Errorf("no Warning %s event", limbov1alpha1.EventStatusTooLarge)
	}
}
