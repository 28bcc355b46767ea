package bundle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// What one teardown pass of the Bundle shop/web (its spec empty: every object
// in the first wave) does to each object labelled with its name, by cascade:
// background deletes what it controls, releases what has a delay or another
// Bundle declares to adopt; --cascade=orphan deletes nothing, disowns what it
// still controls and stops the countdowns the garbage collector left running;
// neither touches what it does not control, nor an object on its way out.
func TestTeardownDecisions(t *testing.T) {
	stamp := "2020-01-01T00:00:00Z"
	objects := func() []client.Object {
		going := bundleConfigMap("going", nil, "example.com/hold")
		now := metav1.Now()
		going.DeletionTimestamp = &now
		// collected: the garbage collector orphaned it in its countdown.
		collected := foreignConfigMap("collected", map[string]string{limbov1alpha1.LabelBundle: "web", limbov1alpha1.LabelPendingDeletion: "true"}, "")
		collected.Annotations = map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: stamp}
		next := livingBundle(cmResource(t, "adoptee", map[string]string{limbov1alpha1.AnnotationAdopt: "true"}))
		next.Name, next.UID = "next", "next-uid"
		return []client.Object{
			bundleConfigMap("plain", nil),
			bundleConfigMap("delayed", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}),
			bundleConfigMap("adoptee", nil),
			going,
			releasedConfigMap("predecessor", stamp),
			foreignConfigMap("theirs", map[string]string{limbov1alpha1.LabelBundle: "web"}, "other-uid"),
			collected,
			next,
		}
	}
	failBundleLists := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*limbov1alpha1.BundleList); ok {
			return apierrors.NewServiceUnavailable("the cache is away")
		}
		return c.List(ctx, list, opts...)
	}}
	for _, tc := range []struct {
		name       string
		finalizers []string
		// notOurs: limbo's finalizer is gone (taken off by hand, or by an
		// earlier teardown); another finalizer holds the Bundle.
		notOurs bool
		// client, engineReader change the answers of the reconciler's cache
		// and of the engine's fresh reads (nil: as they are).
		client, engineReader *interceptor.Funcs
		want                 map[string]string
	}{{
		name: "background",
		want: map[string]string{"plain": "gone", "delayed": "released", "adoptee": "released", "going": "untouched",
			"predecessor": "untouched", "theirs": "untouched", "collected": "untouched"},
	}, {
		name:   "background, the adopters cannot be listed: released, for the reaper to decide",
		client: failBundleLists,
		want: map[string]string{"plain": "released", "delayed": "released", "adoptee": "released", "going": "untouched",
			"predecessor": "untouched", "theirs": "untouched", "collected": "untouched"},
	}, {
		name: "background, the fresh read shows another controller: not deleted",
		engineReader: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if key.Name == "plain" {
				yes := true
				obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "other-uid", Controller: &yes}})
			}
			return err
		}},
		want: map[string]string{"plain": "untouched", "delayed": "released", "adoptee": "released", "going": "untouched",
			"predecessor": "untouched", "theirs": "untouched", "collected": "untouched"},
	}, {
		name:       "--cascade=orphan",
		finalizers: []string{metav1.FinalizerOrphanDependents},
		want: map[string]string{"plain": "disowned", "delayed": "disowned", "adoptee": "disowned", "going": "disowned",
			"predecessor": "untouched", "theirs": "untouched", "collected": "disowned"},
	}, {
		name:    "limbo's finalizer is gone: nothing is touched",
		notOurs: true,
		want: map[string]string{"plain": "untouched", "delayed": "untouched", "adoptee": "untouched", "going": "untouched",
			"predecessor": "untouched", "theirs": "untouched", "collected": "untouched"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := deletedBundle(nil, limbov1alpha1.BundleStatus{}, tc.finalizers...)
			if tc.notOurs {
				b.Finalizers = []string{"example.com/hold"}
			}
			objs := objects()
			f := newTeardownFixture(t, b, nil, objs...)
			if tc.client != nil {
				f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), *tc.client)
			}
			if tc.engineReader != nil {
				f.r.Engine.Reader = interceptor.NewClient(f.c.(client.WithWatch), *tc.engineReader)
			}
			before := map[string]string{}
			for _, o := range objs {
				if _, ok := o.(*corev1.ConfigMap); ok {
					before[o.GetName()] = f.liveConfigMap(t, o.GetName()).ResourceVersion
				}
			}
			_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			for name, want := range tc.want {
				got := "written" // still the Bundle's, or another's, but changed
				switch cm := f.liveConfigMap(t, name); {
				case cm == nil:
					got = "gone"
				case cm.ResourceVersion == before[name]:
					got = "untouched"
				case metav1.GetControllerOf(cm) == nil && cm.Labels[limbov1alpha1.LabelPendingDeletion] == "true":
					got = "released"
				case metav1.GetControllerOf(cm) == nil && cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] == "":
					got = "disowned" // nobody's, out of limbo
				}
				if got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
			}
		})
	}
}
