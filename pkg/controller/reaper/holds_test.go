package reaper

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A due released object whose holds cannot be judged — the Bundle of its name
// or its namespace's Bundles (an adopter) cannot be read — is kept: the pass
// reports the error and looks again after holdRecheck (fail closed).
func TestHoldUnknownFailsClosed(t *testing.T) {
	failing := errors.New("injected: 500 Internal Server Error")
	for _, tc := range []struct {
		name  string
		funcs interceptor.Funcs
	}{
		{"the Bundle of its name cannot be read", interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); ok {
				return failing
			}
			return cl.Get(ctx, key, obj, opts...)
		}}},
		{"its namespace's Bundles cannot be listed", interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*limbov1alpha1.BundleList); ok {
				return failing
			}
			return cl.List(ctx, list, opts...)
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := newReaper(t, inLimbo("due", "2026-11-22T08:00:00Z", "1h", false))
			r.Reader = interceptor.NewClient(c.(client.WithWatch), tc.funcs)
			wait, err := r.pass(context.Background(), true)
			if !errors.Is(err, failing) {
				t.Errorf("err = %v, want the failed read", err)
			}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "due"}, &corev1.ConfigMap{}); err != nil {
				t.Errorf("due: %v, want it kept", err)
			}
			if wait != holdRecheck {
				t.Errorf("wait = %v, want holdRecheck", wait)
			}
		})
	}
}

// The reaper deletes only what is still released on its fresh read: an object
// listed released and adopted since — its countdown not cancelled yet, the
// pass's second write — is left alone.
func TestAdoptedSinceTheListIsNotDeleted(t *testing.T) {
	adopted := inLimbo("adopted", "2026-11-22T08:00:00Z", "1h", false) // due
	adopted.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "new", UID: "b-new", Controller: ptr.To(true)}}
	r, c := newReaper(t, adopted)
	// The LIST was answered before the adopting apply.
	r.Reader = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := cl.List(ctx, list, opts...); err != nil {
			return err
		}
		if l, ok := list.(*metav1.PartialObjectMetadataList); ok {
			for i := range l.Items {
				l.Items[i].OwnerReferences = nil
			}
		}
		return nil
	}})
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "adopted"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("adopted: %v, want it kept", err)
	}
}

// An object in limbo that its Bundle still controls is the Bundle's: the reaper
// does not write to it, not even to restart a countdown on an unparsable stamp.
func TestControlledObjectNotTouched(t *testing.T) {
	controlled := inLimbo("controlled", "yesterday", "1h", true)
	r, c := newReaper(t, controlled, &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "b"}})
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "controlled"}, &got); err != nil || got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "yesterday" {
		t.Errorf("controlled: %v, stamp %q; want it untouched", err, got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	}
}

// A due object whose delete meets a Conflict (it changed since it was read) is
// read and decided again at once, not at the next full scan.
func TestConflictIsDecidedAgainAtOnce(t *testing.T) {
	r, _ := newReaperIntercepted(t, interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "due", errors.New("the object has been modified"))
	}}, inLimbo("due", "2026-11-22T08:00:00Z", "1h", false))
	wait, err := r.pass(context.Background(), true)
	if err != nil || wait != 0 {
		t.Errorf("wait, err = %v, %v; want 0, nil", wait, err)
	}
}

// A Bundle being torn down holds nothing it declares: its teardown never adopts.
func TestTearingDownBundleHoldsNothing(t *testing.T) {
	released := inLimbo("released", "2026-11-22T08:00:00Z", "1h", false) // due
	released.Labels[limbov1alpha1.LabelBundle] = "cart"
	cart := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "ns", Generation: 1,
		Finalizers: []string{limbov1alpha1.FinalizerTeardown}, DeletionTimestamp: &metav1.Time{Time: now}},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "r", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"released"}}`)}}}}}
	r, c := newReaper(t, released, cart)
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "released"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("released: %v, want it deleted at its deadline", err)
	}
}

// The Bundles a pass has read are read again once they are maxReadAge old: a
// pass that deletes many due objects one by one takes minutes,
// and a Bundle re-created during it that declares an object due later in the
// pass holds that object (its pass adopts it) — the pass's first answer, "no
// such Bundle", must not delete it.
func TestBundleCreatedDuringAPassHolds(t *testing.T) {
	for _, after := range []time.Duration{maxReadAge, maxReadAge + time.Second} {
		t.Run(after.String(), func(t *testing.T) { bundleCreatedDuringAPassHolds(t, after) })
	}
}

// bundleCreatedDuringAPassHolds creates the Bundle as the pass deletes its
// first object, after (its clock) into the pass.
func bundleCreatedDuringAPassHolds(t *testing.T, after time.Duration) {
	var r *Reaper
	recreated := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", Generation: 1},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "s", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"second"}}`)}}}}}
	r, c := newReaperIntercepted(t, interceptor.Funcs{Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if err := cl.Delete(ctx, obj, opts...); err != nil {
			return err
		}
		if obj.GetName() == "first" {
			// While the pass deletes "first", its user creates "shop" again,
			// declaring "second"; the pass has gone on for a while.
			if err := cl.Create(ctx, recreated.DeepCopy()); err != nil {
				return err
			}
			r.Clock.(*clocktesting.FakePassiveClock).SetTime(now.Add(after))
		}
		return nil
	}}, inLimbo("first", "2026-11-22T08:00:00Z", "1h", false), inLimbo("second", "2026-11-22T08:00:00Z", "1h", false))
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "first"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("first: %v, want it deleted at its deadline", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "second"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("second: %v, want it kept: the re-created Bundle declares it", err)
	}
}

// An object whose limbo.dev/bundle label names no Bundle that can exist (empty,
// or no object name: written by hand, never by limbo) is not the reaper's: it
// is never deleted, and it holds nothing — before, the read of a Bundle named
// "" failed at every pass, which held the object and ran every pass of the
// shared reaper again after holdRecheck, for every tenant, for good.
func TestReleasedWithABundleLabelThatIsNoName(t *testing.T) {
	for _, label := range []string{"", "Shop_1"} {
		t.Run(fmt.Sprintf("%q", label), func(t *testing.T) {
			forged := inLimbo("forged", "2026-11-22T08:00:00Z", "1h", false) // due
			forged.Labels[limbov1alpha1.LabelBundle] = label
			r, c := newReaper(t, forged)
			wait, err := r.pass(context.Background(), true)
			if err != nil {
				t.Errorf("pass: %v", err)
			}
			if wait == holdRecheck {
				t.Errorf("wait = holdRecheck: the pass comes back every second")
			}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "forged"}, &corev1.ConfigMap{}); err != nil {
				t.Errorf("forged: %v, want it kept", err)
			}
		})
	}
}
