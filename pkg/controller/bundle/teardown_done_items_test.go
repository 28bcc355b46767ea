package bundle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// hastySweeper's teardown says it is done while it still hands over items:
// every claim of the namespace.
type hastySweeper struct{}

func (hastySweeper) Describe() plugin.Description { return plugin.Description{Name: "hasty-sweeper"} }

func (hastySweeper) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (hastySweeper) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	claims := &unstructured.UnstructuredList{}
	claims.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
	if err := req.Reader.List(ctx, claims, client.InNamespace(req.Bundle.Namespace)); err != nil {
		return nil, err
	}
	out := &plugin.TeardownResult{Done: true, Message: "swept"}
	for i := range claims.Items {
		out.Items = append(out.Items, plugin.ObjectItem{Object: &claims.Items[i]})
	}
	return out, nil
}

// A plugin teardown that reports Done together with items (which the guide
// does not forbid) is not done until they are gone: its items were stamped,
// the done mark written, and no call listed them again — the Bundle went and
// the claim stayed marked in limbo for good, never deleted.
func TestTeardownDoneWithItemsWaitsForThem(t *testing.T) {
	registry, err := plugin.NewRegistry(hastySweeper{})
	if err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "hasty-sweeper", DeletionDelay: "1h"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	f := newTeardownFixture(t, deletedBundle(resources, status), registry, claim)
	stamped := func() bool {
		var cur corev1.PersistentVolumeClaim
		err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &cur)
		_, ok := cur.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]
		return err == nil && ok
	}
	f.reconcileUntil(t, "the claim is not stamped", stamped)
	for range 3 {
		f.reconcile(t)
	}
	var b limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &b); err != nil || !slices.Contains(b.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("the Bundle was let go with its plugin's item in limbo: %v, finalizers %v", err, b.Finalizers)
	}
	if _, done := b.Annotations[limbov1alpha1.AnnotationTeardownDonePrefix+"sweep"]; done {
		t.Errorf("the teardown is marked done with its item still there")
	}

	// The claim goes (its deadline): the teardown is done, and the Bundle goes.
	if err := f.c.Delete(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	f.reconcileUntil(t, "the Bundle is not let go once its plugin's item is gone", func() bool {
		var cur limbov1alpha1.Bundle
		err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &cur)
		return apierrors.IsNotFound(err) || err == nil && !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown)
	})
}

// bloatedTeardown keeps a state larger than a Bundle's annotations may be.
type bloatedTeardown struct{}

func (bloatedTeardown) Describe() plugin.Description { return plugin.Description{Name: "bloated"} }

func (bloatedTeardown) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (bloatedTeardown) Teardown(context.Context, plugin.Request) (*plugin.TeardownResult, error) {
	return &plugin.TeardownResult{Message: "working", State: strings.Repeat("x", 300<<10)}, nil
}

// A teardown state too large to keep on the Bundle (the API server takes
// 256 KiB of annotations in all) is the plugin's error, named in
// DeletionFailure: written, it was refused at every pass as "the pass is not
// acted on and is retried", with the API server's size error, for good.
func TestTeardownStateTooLargeIsThePluginsError(t *testing.T) {
	registry, err := plugin.NewRegistry(bloatedTeardown{})
	if err != nil {
		t.Fatal(err)
	}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "bloated"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	f := newTeardownFixture(t, deletedBundle(resources, status), registry)
	var writes int
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); ok {
				if data, _ := patch.Data(obj); strings.Contains(string(data), limbov1alpha1.AnnotationTeardownStatePrefix) {
					writes++
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	f.reconcileUntil(t, "DeletionFailure does not name the state's size", func() bool {
		c := meta.FindStatusCondition(f.status(t).Conditions, limbov1alpha1.ConditionDeletionFailure)
		return c != nil && strings.Contains(c.Message, "teardown state")
	})
	if writes != 0 {
		t.Errorf("the state was written %d times", writes)
	}
}

// A teardown done while it still lists an item that is no countdown of its —
// one in limbo for another Bundle's plugin resource, left to it — is done:
// waiting for that item, the Bundle stayed Terminating for good.
func TestTeardownDoneWithItemsOfAnotherOwner(t *testing.T) {
	registry, err := plugin.NewRegistry(hastySweeper{})
	if err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data",
		Labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{limbov1alpha1.AnnotationPluginResource: "other/x/sweep", limbov1alpha1.AnnotationDeletionDelay: "1h",
			limbov1alpha1.AnnotationDeletionTimestamp: "2026-12-01T00:00:00Z"}}}
	owner := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "x", UID: "x-uid"}}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "hasty-sweeper", DeletionDelay: "1h"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	// Another finalizer keeps the Bundle: its marks can be read once let go.
	f := newTeardownFixture(t, deletedBundle(resources, status, "example.com/keep"), registry, claim, owner)
	var let limbov1alpha1.Bundle
	f.reconcileUntil(t, "the Bundle is not let go", func() bool {
		err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &let)
		return err == nil && !slices.Contains(let.Finalizers, limbov1alpha1.FinalizerTeardown)
	})
	// Marked done: the next passes do not call the plugin again, nor resolve
	// its spec, whose references may name what the waves deleted.
	if _, done := let.Annotations[limbov1alpha1.AnnotationTeardownDonePrefix+"sweep"]; !done {
		t.Errorf("the teardown, done with nothing left to count down, is not marked done: %v", let.Annotations)
	}
	var cur corev1.PersistentVolumeClaim
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &cur); err != nil || cur.Annotations[limbov1alpha1.AnnotationPluginResource] != "other/x/sweep" {
		t.Errorf("the other owner's item: %v, annotations %v; want it left as it was", err, cur.Annotations)
	}
}

// doneKeeping's teardown is done and lists the claim keep as desired.
type doneKeeping struct{}

func (doneKeeping) Describe() plugin.Description { return plugin.Description{Name: "done-keeping"} }

func (doneKeeping) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{}, nil
}

func (doneKeeping) Teardown(ctx context.Context, req plugin.Request) (*plugin.TeardownResult, error) {
	keep := &unstructured.Unstructured{}
	keep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: req.Bundle.Namespace, Name: "keep"}, keep); err != nil {
		return nil, err
	}
	return &plugin.TeardownResult{Done: true, Message: "done", Items: []plugin.ObjectItem{{Object: keep, Desired: true}}}, nil
}

// A teardown done that lists a stamped item as desired is not marked done
// while that item's cancel fails: marked, it was never called again, and the
// item kept limbo's marks for good.
func TestTeardownDoneNotMarkedWhileACancelFails(t *testing.T) {
	registry, err := plugin.NewRegistry(doneKeeping{})
	if err != nil {
		t.Fatal(err)
	}
	keep := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "keep",
		Labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{limbov1alpha1.AnnotationPluginResource: "shop/web/sweep", limbov1alpha1.AnnotationDeletionDelay: "1h",
			limbov1alpha1.AnnotationDeletionTimestamp: "2026-12-01T00:00:00Z"}}}
	resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "done-keeping", DeletionDelay: "1h"}}}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
		Resources: []limbov1alpha1.ResourceStatus{{Name: "sweep", State: limbov1alpha1.ResourceReady}}}
	f := newTeardownFixture(t, deletedBundle(resources, status, "example.com/keep"), registry, keep)
	f.r.Engine.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() == "keep" {
				return apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	calls := 0
	f.reconcileUntil(t, "the teardown is not called", func() bool {
		calls++
		return calls > 3
	})
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.bundle), &cur); err != nil {
		t.Fatal(err)
	}
	if _, done := cur.Annotations[limbov1alpha1.AnnotationTeardownDonePrefix+"sweep"]; done {
		t.Errorf("the teardown is marked done while its item's cancel fails")
	}
}
