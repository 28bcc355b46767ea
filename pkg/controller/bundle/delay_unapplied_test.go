package bundle

import (
	"context"
	"errors"
	"testing"

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

// A delay put on a template while its resource cannot be applied — Blocked by
// a dependency not Ready, its apply refused — reaches the live object all the
// same, as soft-delete.md tells users to do before they remove an object ("put
// the delay on, then remove it"). It did not: a Blocked resource writes
// nothing, and the removal that followed found the live object without a
// delay and deleted it at once; a teardown deleted it in its wave instead of
// releasing it. Only a longer countdown is written: a shorter delay, or none,
// waits for the apply, and an invalid live delay (never deleted) is left.
func TestTemplateDelayReachesAnObjectNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name      string
		live      map[string]string // the live object's annotations
		template  string            // the template's delay
		blocked   bool              // else the apply is refused
		wantDelay string            // on the live object after a pass
	}{
		{"blocked, live without a delay", nil, "1h", true, "1h"},
		{"blocked, live with a shorter delay", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "10m"}, "1h", true, "1h"},
		{"blocked, live with a longer delay: kept", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "2h"}, "1h", true, "2h"},
		{"blocked, live with an invalid delay: kept (never deleted)", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "soon"}, "1h", true, "soon"},
		{"blocked, template without a delay: nothing written", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "10m"}, "", true, "10m"},
		{"apply refused, live without a delay", nil, "1h", false, "1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			registry, err := plugin.NewRegistry(neverReady{})
			if err != nil {
				t.Fatal(err)
			}
			var annotations map[string]string
			if tc.template != "" {
				annotations = map[string]string{limbov1alpha1.AnnotationDeletionDelay: tc.template}
			}
			var dependsOn []string
			resources := []limbov1alpha1.Resource{cmResource(t, "keep", nil)}
			if tc.blocked {
				resources = append(resources, limbov1alpha1.Resource{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}})
				dependsOn = append(dependsOn, "gate")
			}
			resources = append(resources, cmResource(t, "db", annotations, dependsOn...))
			b := livingBundle(resources...)
			f := newTeardownFixture(t, b, registry, bundleConfigMap("keep", nil), bundleConfigMap("db", tc.live))
			if !tc.blocked {
				f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						if patch.Type() == types.ApplyPatchType && obj.GetName() == "db" {
							return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "db", nil)
						}
						return c.Patch(ctx, obj, patch, opts...)
					},
					Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
						return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "db", nil)
					},
				})
			}
			_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}) // a refused apply is an error
			wantState := limbov1alpha1.ResourceBlocked
			if !tc.blocked {
				wantState = limbov1alpha1.ResourceError
			}
			if state, reason := f.resourceState(t, "db"); state != wantState {
				t.Fatalf("resource db is %s (%s), want %s", state, reason, wantState)
			}
			live := f.liveConfigMap(t, "db")
			if live == nil {
				t.Fatal("db was deleted")
			}
			if got := live.Annotations[limbov1alpha1.AnnotationDeletionDelay]; got != tc.wantDelay {
				t.Errorf("live db's delay %q after a pass, want %q", got, tc.wantDelay)
			}
			if live.Data["k"] == "v" {
				t.Errorf("live db was applied (data %v): only the delay may be written", live.Data)
			}
			if !metav1.IsControlledBy(live, b) {
				t.Errorf("live db is no longer the Bundle's: %+v", live.ObjectMeta)
			}
			if tc.wantDelay != "1h" {
				return
			}
			// Then the user removes it (with the dependency that held it):
			// its countdown starts, and it is not deleted.
			f.editResources(t, func(r []limbov1alpha1.Resource) []limbov1alpha1.Resource { return r[:1] })
			f.r.Client = f.c
			f.reconcile(t)
			switch live := f.liveConfigMap(t, "db"); {
			case live == nil:
				t.Error("db deleted at once when its resource was removed, its declared delay 1h")
			case live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "":
				t.Errorf("db not stamped when its resource was removed: %v", live.Annotations)
			}
		})
	}
}

// A Bundle deleted before any pass wrote its template's delay on an object
// (the delay added while the controller was down, or while the resource was
// Blocked and no pass ran since) releases the object with that delay: the
// teardown deleted it in its wave, reading the live object alone.
func TestTeardownReleasesWithTheTemplateDelay(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{cmResource(t, "db", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"})}, limbov1alpha1.BundleStatus{})
	f := newTeardownFixture(t, b, nil, bundleConfigMap("db", nil))
	f.reconcileUntil(t, "db neither released nor deleted", func() bool {
		live := f.liveConfigMap(t, "db")
		return live == nil || !metav1.IsControlledBy(live, b)
	})
	live := f.liveConfigMap(t, "db")
	if live == nil {
		t.Fatal("db deleted by the teardown, its template declaring a delay of 1h")
	}
	if live.Annotations[limbov1alpha1.AnnotationDeletionDelay] != "1h" || live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "" {
		t.Errorf("db released without its declared delay's countdown: %v", live.Annotations)
	}
}

// A template's delay the API server refuses to write (a webhook, a schema the
// stored object no longer meets) does not hold the teardown for ever: the
// object is decided as it is, as before the delay was declared.
func TestTeardownWhoseTemplateDelayIsRefused(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{cmResource(t, "db", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"})}, limbov1alpha1.BundleStatus{})
	f := newTeardownFixture(t, b, nil, bundleConfigMap("db", nil))
	f.r.Engine.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patch.Type() == types.MergePatchType && obj.GetName() == "db" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "db", errors.New("a policy forbids it"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	f.reconcileUntil(t, "the teardown held by a refused write of the template's delay", func() bool {
		return f.liveConfigMap(t, "db") == nil
	})
}
