package bundle

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A Conflict on the Bundle is requeued at once, as the cache catches up; one
// on its objects backs off like any error, so that one that persists is not
// retried ten times a second.
func TestConflictOnBundle(t *testing.T) {
	onBundle := apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "shop", errors.New("the object has been modified"))
	onObject := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("the object has been modified"))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a status write's conflict", fmt.Errorf("write status: %w", onBundle), true},
		{"an object's conflict", errors.Join(fmt.Errorf("apply ConfigMap %q: %w", "settings", onObject)), false},
		{"an object's conflict among other errors", errors.Join(errors.New("boom"), onObject), false},
		{"a Tombstone's conflict", apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "tombstones"}, "t", errors.New("modified")), false},
		{"a conflict of another group's bundles", apierrors.NewConflict(schema.GroupResource{Group: "example.com", Resource: "bundles"}, "b", errors.New("modified")), false},
		{"another error", errors.New("boom"), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := conflictOnBundle(tc.err); got != tc.want {
				t.Errorf("conflictOnBundle(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// The reaper is told when a pass makes a plugin resource Ready, and only then:
// the generated objects it holds for that resource may be its no more.
func TestPluginBecameReady(t *testing.T) {
	b := &limbov1alpha1.Bundle{Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		{Name: "cm", Object: &runtime.RawExtension{Raw: []byte(`{}`)}},
		{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "configmap"}},
	}}}
	st := func(name string, state limbov1alpha1.ResourceState) limbov1alpha1.ResourceStatus {
		return limbov1alpha1.ResourceStatus{Name: name, State: state}
	}
	for _, tc := range []struct {
		name          string
		before, after []limbov1alpha1.ResourceStatus
		want          bool
	}{
		{"Blocked, then Ready", []limbov1alpha1.ResourceStatus{st("gen", limbov1alpha1.ResourceBlocked)}, []limbov1alpha1.ResourceStatus{st("gen", limbov1alpha1.ResourceReady)}, true},
		{"first pass, Ready", nil, []limbov1alpha1.ResourceStatus{st("gen", limbov1alpha1.ResourceReady)}, true},
		{"Ready before", []limbov1alpha1.ResourceStatus{st("gen", limbov1alpha1.ResourceReady)}, []limbov1alpha1.ResourceStatus{st("gen", limbov1alpha1.ResourceReady)}, false},
		{"still planning", nil, []limbov1alpha1.ResourceStatus{st("gen", limbov1alpha1.ResourceInProgress)}, false},
		{"a template Ready", nil, []limbov1alpha1.ResourceStatus{st("cm", limbov1alpha1.ResourceReady), st("gen", limbov1alpha1.ResourceError)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := &limbov1alpha1.BundleStatus{Resources: tc.before}, &limbov1alpha1.BundleStatus{Resources: tc.after}
			if got := pluginBecameReady(b, before, after); got != tc.want {
				t.Errorf("pluginBecameReady = %v, want %v", got, tc.want)
			}
		})
	}
}

// The reaper is told of each pass whose status observes a new generation of the
// Bundle (OnSpecPassed: what it leaves to the Bundle may be its own again), once
// per generation: a pass of an unchanged spec tells nothing.
func TestOnSpecPassedOncePerGeneration(t *testing.T) {
	registry, err := plugin.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(cmResource(t, "a", nil))
	f := newTeardownFixture(t, b, registry)
	var told []client.ObjectKey
	f.r.OnSpecPassed = func(key client.ObjectKey) { told = append(told, key) }
	key := client.ObjectKeyFromObject(b)
	f.reconcile(t)
	f.reconcile(t)
	if want := []client.ObjectKey{key}; !reflect.DeepEqual(told, want) {
		t.Errorf("told after two passes of the first spec: %v, want %v", told, want)
	}
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), key, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources = append(cur.Spec.Resources, cmResource(t, "b", nil))
	cur.Generation++
	if err := f.c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if want := []client.ObjectKey{key, key}; !reflect.DeepEqual(told, want) {
		t.Errorf("told after a pass of the changed spec: %v, want %v", told, want)
	}
}

// A Conflict on the Bundle is retried soon (a newer version is on its way to
// the cache), but not for ever at that pace: a cache that does not catch up
// (its watch lagging behind an API server under load) made a full pass and a
// write every 100 ms, for as long as it lagged, against an API server already
// short of breath. After a few quick retries in a row, the next come later and
// later; a pass that needs none ends the run.
func TestQuickRetriesBackOff(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}}}
	f := newTeardownFixture(t, b, nil)
	conflicting := true
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if conflicting {
				return apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if conflicting {
				return apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	var afters []time.Duration
	for range 10 {
		res, err := f.r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		afters = append(afters, res.RequeueAfter)
	}
	quick := func(d time.Duration) bool { return d > conflictRetry-10*time.Millisecond && d <= conflictRetry }
	if !quick(afters[0]) {
		t.Errorf("the first retry after %v, want conflictRetry (%v)", afters[0], conflictRetry)
	}
	for i := 1; i < len(afters); i++ {
		if afters[i] < afters[i-1]-10*time.Millisecond {
			t.Errorf("retry %d after %v, sooner than the one before (%v): %v", i, afters[i], afters[i-1], afters)
		}
	}
	if last := afters[len(afters)-1]; last < 10*conflictRetry {
		t.Errorf("after ten Conflicts in a row the next retry comes after %v, want at least %v: %v", last, 10*conflictRetry, afters)
	}

	conflicting = false
	if _, err := f.r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	conflicting = true
	f.editResources(t, func(r []limbov1alpha1.Resource) []limbov1alpha1.Resource {
		return append(r, configMapResource(t, "more"))
	})
	if res, err := f.r.Reconcile(context.Background(), req); err != nil || !quick(res.RequeueAfter) {
		t.Errorf("the first Conflict after a pass that needed no retry: retry after %v (%v), want conflictRetry again", res.RequeueAfter, err)
	}
}

// Paced quick retries never come after a countdown's end: an orphan due in a
// moment is deleted on time while the cache lags.
func TestQuickRetriesKeepDeadlines(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}}}
	due := time.Now().Add(3 * time.Second)
	orphan := bundleConfigMap("old", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h",
		limbov1alpha1.AnnotationDeletionTimestamp: due.Add(-time.Hour).UTC().Format(time.RFC3339)})
	orphan.Labels[limbov1alpha1.LabelPendingDeletion] = "true"
	f := newTeardownFixture(t, b, nil, orphan)
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, obj.GetName(), errors.New("the object has been modified"))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, obj.GetName(), errors.New("the object has been modified"))
		},
	})
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	for i := range 12 {
		res, err := f.r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if left := time.Until(due) + time.Second; res.RequeueAfter > left {
			t.Fatalf("retry %d after %v, past the orphan's deadline (%v away)", i, res.RequeueAfter, left)
		}
	}
}

// A pass that failed (an apply refused) and whose status write met a Conflict
// backs off with its errors: it came back every 100 ms, unpaced, its errors
// dropped, for as long as the cache lagged.
func TestQuickRetriesOfAFailedPass(t *testing.T) {
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Generation: 2},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{configMapResource(t, "app")}}}
	f := newTeardownFixture(t, b, nil)
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "web", errors.New("the object has been modified"))
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); !ok {
				return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return conflict
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return conflict
		},
	})
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil || !strings.Contains(err.Error(), "request timed out") {
		t.Errorf("Reconcile error %v, want the pass's own error (the work queue backs off)", err)
	}
}

// A teardown's Conflicts on the Bundle (its finalizer's removal on a cached
// copy the API server has moved past) are paced as a pass's quick retries.
func TestQuickRetriesOfATeardown(t *testing.T) {
	f := newTeardownFixture(t, deletedBundle(nil, limbov1alpha1.BundleStatus{ObservedGeneration: 1}), nil)
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "web", errors.New("the object has been modified"))
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); ok {
				return conflict
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	var last time.Duration
	for range 10 {
		res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.bundle)})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		last = res.RequeueAfter
	}
	if last < 10*conflictRetry {
		t.Errorf("after ten Conflicts in a row the teardown comes back after %v, want at least %v", last, 10*conflictRetry)
	}
}

// One Reconcile counts once in its Bundle's run of quick retries, however many
// times it asks; one that does not ask ends the run, whatever path it returned
// by; other Bundles' runs are their own.
func TestQuickRetryCounting(t *testing.T) {
	var q quickRetries
	web, shop := types.NamespacedName{Namespace: "a", Name: "web"}, types.NamespacedName{Namespace: "a", Name: "shop"}
	reconcile := func(key types.NamespacedName, asks int) int {
		r := q.start(key)
		defer r.end()
		n := 0
		for range asks {
			n = r.retry()
		}
		return n
	}
	for i, tc := range []struct {
		key  types.NamespacedName
		asks int
		want int
	}{
		{web, 1, 1}, {web, 2, 2}, {shop, 1, 1}, {web, 1, 3},
		{web, 0, 0}, {web, 1, 1}, {shop, 1, 2},
	} {
		if got := reconcile(tc.key, tc.asks); got != tc.want {
			t.Errorf("step %d: %s asked %d times: count %d, want %d", i, tc.key, tc.asks, got, tc.want)
		}
	}
}
