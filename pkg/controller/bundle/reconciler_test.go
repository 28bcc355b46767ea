package bundle

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
