package bundle

import (
	"context"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A StorageClass's binding mode is read once and remembered for
// bindingModeTTL; a class that does not exist, or that limbo may not read, is
// taken as binding at once and remembered for unreadableClassTTL (before, a
// claim of a missing class cost a GET at every pass of its Bundle); any other
// failure is not remembered.
func TestBindsOnFirstUse(t *testing.T) {
	classes := schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}
	for _, tc := range []struct {
		name     string
		class    string
		err      error // the GET's answer, if not the class
		want     bool
		remember time.Duration // 0: read again at every call
	}{
		{name: "waits for the first consumer", class: "local", want: true, remember: bindingModeTTL},
		{name: "binds at once", class: "standard", remember: bindingModeTTL},
		{name: "not found", class: "missing", err: apierrors.NewNotFound(classes, "missing"), remember: unreadableClassTTL},
		{name: "forbidden", class: "secret", err: apierrors.NewForbidden(classes, "secret", nil), remember: unreadableClassTTL},
		{name: "the API server failed", class: "flaky", err: apierrors.NewServiceUnavailable("etcd")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gets := 0
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)},
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}},
			).WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				gets++
				if tc.err != nil {
					return tc.err
				}
				return c.Get(ctx, key, obj, opts...)
			}}).Build()
			clock := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
			r := &Reconciler{APIReader: c, Clock: clock}
			for i, step := range []struct {
				after    time.Duration
				wantGets int
			}{
				{0, 1},
				{time.Second, 1},
				{tc.remember + time.Second, 2},
			} {
				clock.Step(step.after)
				if got := r.bindsOnFirstUse(context.Background(), tc.class); got != tc.want {
					t.Errorf("bindsOnFirstUse = %v, want %v", got, tc.want)
				}
				want := step.wantGets
				if tc.remember == 0 {
					want = i + 1 // a GET at every call
				}
				if gets != want {
					t.Errorf("%v later: %d GETs, want %d", step.after, gets, want)
				}
			}
		})
	}
}
