package bundle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// itemAt is an object of kind gvk at ns/name, as a listing in limbo returns it.
func itemAt(gvk schema.GroupVersionKind, ns, name string) *metav1.PartialObjectMetadata {
	item := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	item.SetGroupVersionKind(gvk)
	return item
}

// An object that names a Bundle in limbo.dev/pluginResource is the Bundle's
// when no other tenant could have written it (cluster-scoped, or in the
// Bundle's namespace) or when the Bundle's status lists it; the annotation
// alone vouches for nothing.
func TestVouchedItem(t *testing.T) {
	volume := schema.GroupVersionKind{Group: "csi-baremetal.dell.com", Version: "v1", Kind: "Volume"}
	pvc := corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	b.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{
		{APIVersion: "csi-baremetal.dell.com/v1", Kind: "Volume", Namespace: "workload", Name: "vol"},
		{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "remote", Name: "data", Cluster: "prod-kubeconfig"},
		{APIVersion: "csi-baremetal.dell.com/v1beta1", Kind: "Volume", Namespace: "workload", Name: "old-version"},
	}
	for _, tc := range []struct {
		name string
		item *metav1.PartialObjectMetadata
		want bool
	}{
		{"cluster-scoped", itemAt(volume.GroupVersion().WithKind("Drive"), "", "drive"), true},
		{"in the Bundle's namespace", itemAt(pvc, "shop", "anything"), true},
		{"listed, in another namespace", itemAt(volume, "workload", "vol"), true},
		{"listed under another version of its group", itemAt(volume, "workload", "old-version"), true},
		{"not listed, in another namespace (a forgery)", itemAt(volume, "team-b", "bait"), false},
		{"listed name, another kind", itemAt(pvc, "workload", "vol"), false},
		{"listed name, another namespace", itemAt(volume, "team-b", "vol"), false},
		{"listed for another cluster only", itemAt(pvc, "remote", "data"), false},
	} {
		if got := vouchedItem(b, tc.item); got != tc.want {
			t.Errorf("%s: vouchedItem = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Only a retry-able failure on an item that no other tenant can write holds
// the teardown.
func TestHoldsTeardown(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewServerTimeout(gr, "patch", 1), true},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), true},
		{apierrors.NewServiceUnavailable("later"), true},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil), false},
		{apierrors.NewBadRequest("no"), false},
		{apierrors.NewMethodNotSupported(gr, "patch"), false},
		// A webhook's denial with code 409 (Crossplane's Usage protection).
		{&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409, Reason: "This resource is in-use by 1 usage(s)"}}, false},
		// A policy that strips limbo's marks (a template's delay written at a
		// teardown) from every answer: retried, it held the Bundle for good.
		{fmt.Errorf("update ConfigMap shop/db: the API server's answer has no annotation limbo.dev/deletionDelay: %w", softdelete.ErrMarksNotKept), false},
	} {
		if got := holdsTeardown(tc.err); got != tc.want {
			t.Errorf("%v: holdsTeardown = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// itemInLimbo is a ConfigMap ns/name in limbo for plugin resource owner.
func itemInLimbo(ns, name, owner string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{limbov1alpha1.AnnotationPluginResource: owner, limbov1alpha1.AnnotationDeletionDelay: "1h",
			limbov1alpha1.AnnotationDeletionTimestamp: "2020-01-01T00:00:00Z"}}}
}

// refusePatches makes the fixture's engine write as a ServiceAccount that may
// not patch the objects of refused (namespace/name), or that gets err for them.
func refusePatches(f *teardownFixture, err error, refused ...string) {
	f.r.Engine.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			for _, key := range refused {
				if key == obj.GetNamespace()+"/"+obj.GetName() {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
}

// inLimbo reports whether the fixture's ConfigMap ns/name still carries the
// pending-deletion label; it fails when the ConfigMap is gone.
func (f *teardownFixture) inLimbo(t *testing.T, ns, name string) bool {
	t.Helper()
	var cm corev1.ConfigMap
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatalf("ConfigMap %s/%s: %v (an item was deleted?)", ns, name, err)
	}
	return cm.Labels[limbov1alpha1.LabelPendingDeletion] == "true"
}

// The security review's case, in one teardown pass: a forged item (another
// tenant's ConfigMap naming the Bundle, which its ServiceAccount may not
// write) neither fails the pass nor shows in the status or events; a real item
// in another namespace that the ServiceAccount may not write is a
// DeletionFailure and a CancelFailed Warning, and holds nothing; the Bundle's
// other items are cancelled; nothing is deleted.
func TestTeardownCancelFailuresDoNotAbort(t *testing.T) {
	owner := "shop/web/sweep"
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources:    []limbov1alpha1.ResourceStatus{{Name: "app", State: limbov1alpha1.ResourceReady}},
		ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}}
	setPending(&status, []limbov1alpha1.PendingDeletion{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "mine", Resource: "sweep"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "workload", Name: "real", Resource: "sweep"},
	})
	app := bundleConfigMap("app", nil, "example.com/hold") // holds the teardown: its status is written
	f := newTeardownFixture(t, deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "app")}, status), nil,
		app, itemInLimbo("shop", "mine", owner), itemInLimbo("workload", "real", owner), itemInLimbo("team-b", "bait", owner))
	recorder := record.NewFakeRecorder(100)
	f.r.Recorder, f.r.Engine.Recorder = recorder, recorder
	refusePatches(f, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("the tenant may not")), "team-b/bait", "workload/real")

	for range 2 {
		if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)}); err != nil {
			t.Fatalf("Reconcile: %v (a refused cancel aborted the teardown)", err)
		}
	}
	if f.inLimbo(t, "shop", "mine") {
		t.Errorf("the Bundle's own item was not cancelled")
	}
	f.inLimbo(t, "workload", "real")
	f.inLimbo(t, "team-b", "bait")
	st := f.status(t)
	failure := meta.FindStatusCondition(st.Conditions, limbov1alpha1.ConditionDeletionFailure)
	if failure == nil || failure.Status != metav1.ConditionTrue || !strings.Contains(failure.Message, "workload/real") || !strings.Contains(failure.Message, "the tenant may not") {
		t.Errorf("DeletionFailure %+v, want the refused cancel of workload/real", failure)
	}
	if strings.Contains(failure.Message, "bait") {
		t.Errorf("DeletionFailure names the forged item: %s", failure.Message)
	}
	for _, pd := range st.PendingDeletions {
		if pd.Name == "bait" {
			t.Errorf("pendingDeletions lists the forged item: %+v", pd)
		}
	}
	close(recorder.Events)
	var cancelFailed int
	for ev := range recorder.Events {
		if strings.Contains(ev, "bait") {
			t.Errorf("event names the forged item: %s", ev)
		}
		if strings.Contains(ev, limbov1alpha1.EventCancelFailed) && strings.Contains(ev, "workload/real") {
			cancelFailed++
		}
	}
	if cancelFailed == 0 {
		t.Errorf("no %s Warning for workload/real", limbov1alpha1.EventCancelFailed)
	}
}

// Once nothing else holds the teardown, a refused cancel does not either: the
// Bundle goes, the item keeps limbo's marks (and nothing deletes it).
func TestTeardownRefusedCancelLetsTheBundleGo(t *testing.T) {
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1, ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}}
	setPending(&status, []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "mine", Resource: "sweep"}})
	f := newTeardownFixture(t, deletedBundle(nil, status), nil, itemInLimbo("shop", "mine", "shop/web/sweep"), itemInLimbo("team-b", "bait", "shop/web/sweep"))
	refusePatches(f, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no")), "shop/mine", "team-b/bait")
	f.reconcile(t)
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); !apierrors.IsNotFound(err) {
		t.Errorf("Bundle still there (finalizers %v, err %v), want gone", b.Finalizers, err)
	}
	if !f.inLimbo(t, "shop", "mine") || !f.inLimbo(t, "team-b", "bait") {
		t.Errorf("a refused cancel was written")
	}
}

// A failure that clears by itself, on an item no other tenant can write, holds
// the teardown until a retry succeeds — after the other items were cancelled.
func TestTeardownTransientCancelFailureHolds(t *testing.T) {
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1, ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}}
	setPending(&status, []limbov1alpha1.PendingDeletion{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "a", Resource: "sweep"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "b", Resource: "sweep"},
	})
	f := newTeardownFixture(t, deletedBundle(nil, status), nil, itemInLimbo("shop", "a", "shop/web/sweep"), itemInLimbo("shop", "b", "shop/web/sweep"))
	refusePatches(f, apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "patch", 1), "shop/a")
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)}); err == nil {
		t.Fatal("Reconcile succeeded, want the timeout (retried)")
	}
	if !f.inLimbo(t, "shop", "a") || f.inLimbo(t, "shop", "b") {
		t.Errorf("want a still in limbo (its cancel timed out) and b cancelled")
	}
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); err != nil {
		t.Fatalf("the Bundle went while its item's cancel is to be retried: %v", err)
	}
}

// A pass does not list an item its status does not vouch for, but one of a
// plugin resource that left the Bundle is still cancelled (cancelling never
// deletes): a real item whose entry the status lost (its list cut, a status
// write failed) kept its stamp, and a resource of that name added again would
// find it due at once. A forged one that the ServiceAccount may not write is
// left as it is, and fails nothing.
func TestPassCancelsUnvouchedItemsOfAResourceThatLeft(t *testing.T) {
	owner := "shop/web/sweep" // the Bundle has no resource "sweep" any more
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}}
	setPending(&status, []limbov1alpha1.PendingDeletion{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "mine", Resource: "sweep"},
	})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}}, Status: status}
	f := newTeardownFixture(t, b, nil,
		itemInLimbo("shop", "mine", owner), itemInLimbo("workload", "lost", owner), itemInLimbo("team-b", "bait", owner))
	refusePatches(f, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("the tenant may not")), "team-b/bait")

	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if f.inLimbo(t, "shop", "mine") {
		t.Errorf("the listed item of the resource that left was not cancelled")
	}
	if f.inLimbo(t, "workload", "lost") {
		t.Errorf("the real item the status lost was not cancelled: a resource named sweep added again would find it due")
	}
	if !f.inLimbo(t, "team-b", "bait") {
		t.Errorf("the forged item was written")
	}
	for _, pd := range f.status(t).PendingDeletions {
		if pd.Name == "bait" || pd.Name == "lost" {
			t.Errorf("pendingDeletions lists an item the status did not vouch for: %+v", pd)
		}
	}
}

// The items of a plugin resource that left the Bundle are looked up in the API
// server's watch cache (resourceVersion 0), which may not show their stamp
// yet: an item missing from that answer is looked up again from etcd before
// its entry is dropped. It was dropped: nothing looked for it again, it kept
// its stamp for good, and a resource of that name added again found it long
// due and deleted it at once.
func TestPassLooksUpAnItemTheWatchCacheMissed(t *testing.T) {
	owner := "shop/web/sweep" // the Bundle has no resource "sweep" any more
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}}
	stamp := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	setPending(&status, []limbov1alpha1.PendingDeletion{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "workload", Name: "vol", Resource: "sweep", DeletionTimestamp: &stamp},
		// Held, never stamped: in no listing by the label, not looked for again.
		{APIVersion: "v1", Kind: "Secret", Namespace: "workload", Name: "held", Resource: "sweep", Message: limbov1alpha1.PendingMessageWaitingForReady},
		// Another owner's countdown: in no listing of this Bundle's items.
		{APIVersion: "v1", Kind: "Secret", Namespace: "workload", Name: "theirs", Resource: "sweep", DeletionTimestamp: &stamp,
			Message: "in limbo for plugin resource other/x/sweep" + softdelete.MsgLeftToOwner},
	})
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}}, Status: status}
	f := newTeardownFixture(t, b, nil, itemInLimbo("workload", "vol", owner))
	var stale, fresh, freshSecrets int
	f.r.APIReader = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var o client.ListOptions
			o.ApplyOptions(opts)
			if o.Raw != nil && o.Raw.ResourceVersion == "0" && list.GetObjectKind().GroupVersionKind().Kind == "ConfigMapList" {
				stale++
				return nil // the watch cache, before the stamp: nothing in limbo
			}
			switch list.GetObjectKind().GroupVersionKind().Kind {
			case "ConfigMapList":
				fresh++
			case "SecretList": // in limbo, from etcd
				if (o.Raw == nil || o.Raw.ResourceVersion != "0") && o.LabelSelector != nil && strings.Contains(o.LabelSelector.String(), limbov1alpha1.LabelPendingDeletion) {
					freshSecrets++
				}
			}
			return c.List(ctx, list, opts...)
		},
	})

	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if stale == 0 || fresh == 0 {
		t.Errorf("listings of ConfigMaps in limbo: %d from the watch cache, %d from etcd; want the second after the first", stale, fresh)
	}
	if f.inLimbo(t, "workload", "vol") {
		t.Errorf("the item of the resource that left was not cancelled")
	}
	if freshSecrets != 0 {
		t.Errorf("Secrets listed %d times from etcd for an entry no listing holds", freshSecrets)
	}
}
