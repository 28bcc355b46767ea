package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// The decisions of a pass about what it deletes, adopts and leaves alone, on
// a fake API server: one pass (or a few) of a Bundle shop/web, then what is
// left of each object. The integration tests (it/) run the same rules on a real
// one; these say which decision of the pass makes each outcome.

// livingBundle is the Bundle shop/web (UID b-uid, generation 1), not being
// deleted, with resources.
func livingBundle(resources ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
	b := deletedBundle(resources, limbov1alpha1.BundleStatus{})
	b.DeletionTimestamp = nil
	return b
}

// cmResource is a resource that declares the ConfigMap name (with
// annotations), after the resources it depends on (references for order).
func cmResource(t *testing.T, name string, annotations map[string]string, dependsOn ...string) limbov1alpha1.Resource {
	t.Helper()
	meta := map[string]any{"name": name}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	res := limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: raw}}
	for _, dep := range dependsOn {
		res.References = append(res.References, limbov1alpha1.Reference{Resource: dep})
	}
	return res
}

// foreignConfigMap is a ConfigMap of shop that is not the Bundle's: labels
// and a controller as given (controller: its UID; "" for none).
func foreignConfigMap(name string, labels map[string]string, controller types.UID) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels}, Data: map[string]string{"k": "theirs"}}
	if controller != "" {
		yes := true
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: controller, Controller: &yes}}
	}
	return cm
}

// releasedConfigMap is a ConfigMap a teardown of an earlier Bundle shop/web
// released: labelled with its name, nothing controls it, its countdown (1h)
// started at stamp.
func releasedConfigMap(name, stamp string) *corev1.ConfigMap {
	cm := foreignConfigMap(name, map[string]string{limbov1alpha1.LabelBundle: "web", limbov1alpha1.LabelPendingDeletion: "true"}, "")
	cm.Annotations = map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: stamp, limbov1alpha1.AnnotationReleased: "web"}
	return cm
}

// labelledCache is the reconciler's cache as it is: it holds the objects
// labelled with a Bundle's name, not the others (an object in the way is read
// from the API server).
func labelledCache(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := c.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		if _, limbos := obj.(*limbov1alpha1.Bundle); !limbos && obj.GetLabels()[limbov1alpha1.LabelBundle] == "" {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
		}
		return nil
	}})
}

// neverReady is a plugin resource's plugin whose plan is never Ready: the
// Bundle is half rolled out.
type neverReady struct{}

func (neverReady) Describe() plugin.Description { return plugin.Description{Name: "never-ready"} }

func (neverReady) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: false, Message: "not yet"}, nil
}

// liveConfigMap is the ConfigMap name as the fake API server has it; nil when
// there is none.
func (f *teardownFixture) liveConfigMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	switch err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, &cm); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		t.Fatal(err)
	}
	return &cm
}

// resourceState is resource name's state and reason in the Bundle's status.
func (f *teardownFixture) resourceState(t *testing.T, name string) (limbov1alpha1.ResourceState, string) {
	t.Helper()
	for _, st := range f.status(t).Resources {
		if st.Name == name {
			return st.State, st.Reason
		}
	}
	return "", ""
}

func TestPassOrphanDecisions(t *testing.T) {
	stamp := "2020-01-01T00:00:00Z"
	for _, tc := range []struct {
		name       string
		resources  func(t *testing.T) []limbov1alpha1.Resource
		allowEmpty bool
		objects    func() []client.Object
		// kept are the ConfigMaps that must be there after the pass, unwritten
		// (the resourceVersion they were created with); gone those that must
		// not.
		kept, gone []string
		// adopted are the ConfigMaps the Bundle must control after the pass,
		// out of limbo.
		adopted []string
		// pending are the names pendingDeletions lists, with their message.
		pending map[string]string
		// states are resources' states and reasons after the pass.
		states map[string][2]string
	}{{
		name: "every resource Ready: the orphan goes",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "keep", nil)}
		},
		objects: func() []client.Object {
			return []client.Object{bundleConfigMap("keep", nil), bundleConfigMap("x", nil)}
		},
		gone:   []string{"x"},
		states: map[string][2]string{"keep": {"Ready", ""}},
	}, {
		name: "a resource not Ready: the orphan is kept, waiting",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "keep", nil), {Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}}}
		},
		objects: func() []client.Object {
			return []client.Object{bundleConfigMap("keep", nil), bundleConfigMap("x", nil), releasedConfigMap("released", stamp)}
		},
		kept:    []string{"x", "released"},
		pending: map[string]string{"x": limbov1alpha1.PendingMessageWaitingForReady},
	}, {
		name: "an object in the way (NotOwned) is untouched, and the orphan is kept",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "keep", nil), cmResource(t, "taken", nil)}
		},
		objects: func() []client.Object {
			return []client.Object{bundleConfigMap("keep", nil), bundleConfigMap("x", nil), foreignConfigMap("taken", nil, "")}
		},
		kept:    []string{"x", "taken"},
		pending: map[string]string{"x": limbov1alpha1.PendingMessageWaitingForReady},
		states:  map[string][2]string{"taken": {"Error", limbov1alpha1.ReasonNotOwned}, "keep": {"Ready", ""}},
	}, {
		name: "an object another controller controls is untouched, though labelled with the Bundle's name",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "taken", map[string]string{limbov1alpha1.AnnotationAdopt: "true"})}
		},
		objects: func() []client.Object {
			return []client.Object{bundleConfigMap("x", nil), foreignConfigMap("taken", map[string]string{limbov1alpha1.LabelBundle: "web"}, "other-uid")}
		},
		kept:    []string{"x", "taken"},
		pending: map[string]string{"x": limbov1alpha1.PendingMessageWaitingForReady},
		states:  map[string][2]string{"taken": {"Error", limbov1alpha1.ReasonControlledByOther}},
	}, {
		name:      "an empty spec without allowEmpty deletes nothing",
		resources: func(*testing.T) []limbov1alpha1.Resource { return nil },
		objects:   func() []client.Object { return []client.Object{bundleConfigMap("x", nil)} },
		kept:      []string{"x"},
		pending:   map[string]string{"x": limbov1alpha1.PendingMessageEmptyBundle},
	}, {
		name:       "an empty spec with allowEmpty deletes what the Bundle manages",
		resources:  func(*testing.T) []limbov1alpha1.Resource { return nil },
		allowEmpty: true,
		objects:    func() []client.Object { return []client.Object{bundleConfigMap("x", nil)} },
		gone:       []string{"x"},
	}, {
		name: "an object only labelled with the Bundle's name (a released one) is no orphan of it",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "keep", nil)}
		},
		objects: func() []client.Object {
			return []client.Object{bundleConfigMap("keep", nil), releasedConfigMap("released", stamp)}
		},
		kept:   []string{"released"},
		states: map[string][2]string{"keep": {"Ready", ""}},
	}, {
		name: "an object labelled with the Bundle's name that nothing controls is adopted, its countdown cancelled",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "back", nil)}
		},
		objects: func() []client.Object { return []client.Object{releasedConfigMap("back", stamp)} },
		adopted: []string{"back"},
		states:  map[string][2]string{"back": {"Ready", ""}},
	}, {
		name: "an object nothing controls is adopted when its template says limbo.dev/adopt",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "mine", map[string]string{limbov1alpha1.AnnotationAdopt: "true"})}
		},
		objects: func() []client.Object { return []client.Object{foreignConfigMap("mine", nil, "")} },
		adopted: []string{"mine"},
		states:  map[string][2]string{"mine": {"Ready", ""}},
	}, {
		name: "a resource waiting for its dependencies writes nothing: no create, and the object it will adopt keeps its countdown",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}},
				cmResource(t, "new", nil, "gate"), cmResource(t, "back", nil, "gate")}
		},
		objects: func() []client.Object { return []client.Object{releasedConfigMap("back", stamp)} },
		kept:    []string{"back"},
		gone:    []string{"new"},
		states: map[string][2]string{"new": {"Blocked", limbov1alpha1.ReasonDependenciesNotReady},
			"back": {"Blocked", limbov1alpha1.ReasonDependenciesNotReady}},
	}, {
		name: "a resource waiting for its dependencies reads its object in the way, and says so",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}}, cmResource(t, "taken", nil, "gate")}
		},
		objects: func() []client.Object { return []client.Object{foreignConfigMap("taken", nil, "")} },
		kept:    []string{"taken"},
		states:  map[string][2]string{"taken": {"Error", limbov1alpha1.ReasonNotOwned}},
	}, {
		name: "an object of the Bundle being deleted is left to go, not applied",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "going", nil)}
		},
		objects: func() []client.Object {
			going := bundleConfigMap("going", nil, "example.com/hold")
			now := metav1.Now()
			going.DeletionTimestamp = &now
			return []client.Object{going}
		},
		kept:   []string{"going"},
		states: map[string][2]string{"going": {"Deleting", limbov1alpha1.ReasonBeingDeleted}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			registry, err := plugin.NewRegistry(neverReady{})
			if err != nil {
				t.Fatal(err)
			}
			b := livingBundle(tc.resources(t)...)
			b.Spec.AllowEmpty = tc.allowEmpty
			objects := tc.objects()
			f := newTeardownFixture(t, b, registry, objects...)
			f.r.Client = labelledCache(f.c.(client.WithWatch))
			before, deleting := map[string]string{}, map[string]bool{}
			for _, o := range objects {
				before[o.GetName()] = f.liveConfigMap(t, o.GetName()).ResourceVersion
				deleting[o.GetName()] = o.GetDeletionTimestamp() != nil
			}
			f.reconcile(t)
			for _, name := range tc.kept {
				switch cm := f.liveConfigMap(t, name); {
				case cm == nil:
					t.Errorf("ConfigMap %s was deleted", name)
				case cm.DeletionTimestamp != nil && !deleting[name]:
					t.Errorf("ConfigMap %s is being deleted", name)
				case cm.ResourceVersion != before[name]:
					t.Errorf("ConfigMap %s was written: %+v", name, cm.ObjectMeta)
				}
			}
			for _, name := range tc.gone {
				if cm := f.liveConfigMap(t, name); cm != nil {
					t.Errorf("ConfigMap %s is still there: %+v", name, cm.ObjectMeta)
				}
			}
			for _, name := range tc.adopted {
				switch cm := f.liveConfigMap(t, name); {
				case cm == nil:
					t.Errorf("ConfigMap %s was deleted", name)
				case !metav1.IsControlledBy(cm, b):
					t.Errorf("ConfigMap %s is not controlled by the Bundle: %+v", name, cm.OwnerReferences)
				case cm.Labels[limbov1alpha1.LabelPendingDeletion] != "" || cm.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "":
					t.Errorf("ConfigMap %s is still in limbo: %+v", name, cm.ObjectMeta)
				}
			}
			got := map[string]string{}
			for _, pd := range f.status(t).PendingDeletions {
				got[pd.Name] = pd.Message
			}
			if len(got) != len(tc.pending) {
				t.Errorf("pendingDeletions = %v, want %v", got, tc.pending)
			}
			for name, msg := range tc.pending {
				if got[name] != msg {
					t.Errorf("pendingDeletions[%s] = %q, want %q", name, got[name], msg)
				}
			}
			for name, want := range tc.states {
				if state, reason := f.resourceState(t, name); string(state) != want[0] || reason != want[1] {
					t.Errorf("resource %s: %s %s, want %s %s", name, state, reason, want[0], want[1])
				}
			}
		})
	}
}

// An orphan due for deletion is deleted only on what its fresh read and the
// Bundle read again at that moment say (stillOrphan), and handed over to a
// Bundle that declares it to adopt it instead (handOver): the Bundle shop/web
// declares keep, and x, which it controls, left its spec. Each case changes
// what the API server answers at the moment of the delete; x must be kept
// (still the Bundle's), released, or gone.
func TestPassOrphanClaims(t *testing.T) {
	bundleMeta := func(obj client.Object) (*metav1.PartialObjectMetadata, bool) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		return m, ok && m.Kind == "Bundle"
	}
	// freshDelay makes the engine's fresh read of x show delay, put on just
	// before the deletion.
	freshDelay := func(delay string) *interceptor.Funcs {
		return &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if key.Name == "x" {
				obj.SetAnnotations(map[string]string{limbov1alpha1.AnnotationDeletionDelay: delay})
			}
			return err
		}}
	}
	// next is another Bundle of shop that declares x, to adopt it.
	next := livingBundle(cmResource(t, "x", map[string]string{limbov1alpha1.AnnotationAdopt: "true"}))
	next.Name, next.UID = "next", "next-uid"
	for _, tc := range []struct {
		name string
		// adopter: next is there.
		adopter bool
		// notReady: the Bundle also declares a plugin resource that is never
		// Ready (the readiness gate is closed).
		notReady bool
		// client, apiReader, engineReader and engineClient change the
		// answers of the reconciler's cache and API server reads, the
		// engine's fresh reads and its writes (nil: as they are).
		client, apiReader, engineReader, engineClient *interceptor.Funcs
		// want is what becomes of x: kept (the Bundle's still), released (no
		// controller, in limbo), gone.
		want string
		// pending, when set, is the message of x's status.pendingDeletions
		// entry: why it is kept.
		pending string
	}{{
		name: "nothing changed: x goes",
		want: "gone",
	}, {
		name: "the Bundle's spec changed since the pass read it: x is kept",
		apiReader: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if m, ok := bundleMeta(obj); ok {
				m.Generation++
			}
			return err
		}},
		want: "kept",
	}, {
		name: "the Bundle is being deleted: x is kept, for the teardown",
		apiReader: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if m, ok := bundleMeta(obj); ok {
				now := metav1.Now()
				m.DeletionTimestamp = &now
			}
			return err
		}},
		want: "kept",
	}, {
		name: "a Bundle of the same name was created again: x is kept",
		apiReader: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if m, ok := bundleMeta(obj); ok {
				m.UID = "another-uid"
			}
			return err
		}},
		want: "kept",
	}, {
		name: "the Bundle cannot be read again: x is kept",
		apiReader: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := bundleMeta(obj); ok {
				return apierrors.NewServiceUnavailable("etcd is away")
			}
			return c.Get(ctx, key, obj, opts...)
		}},
		want: "kept",
	}, {
		name: "the fresh read shows x controlled by another: x is left alone",
		engineReader: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if key.Name == "x" {
				yes := true
				obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "other-uid", Controller: &yes}})
			}
			return err
		}},
		want: "kept",
	}, {
		name:    "another Bundle declares x to adopt it: x is released to it, not deleted",
		adopter: true,
		want:    "released",
	}, {
		// A delay put on (24h) just before the deletion: the fresh read is no longer
		// due, and a hand-over would give x away early (or with a delay
		// that never ends), the reaper deleting it if the adopter drops it.
		name:         "another Bundle declares x to adopt it, a delay put on just before: x is kept",
		adopter:      true,
		engineReader: freshDelay("24h"),
		want:         "kept",
	}, {
		// An invalid delay put on just before the deletion: never deleted.
		name:         "another Bundle declares x to adopt it, an invalid delay put on just before: x is kept",
		adopter:      true,
		engineReader: freshDelay("banana"),
		want:         "kept",
	}, {
		name: "the adopters cannot be listed: x is kept",
		client: &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*limbov1alpha1.BundleList); ok {
				return apierrors.NewServiceUnavailable("the cache is away")
			}
			return c.List(ctx, list, opts...)
		}},
		want: "kept",
	}, {
		name:    "the release conflicts (x changed since it was read): x is kept, decided again",
		adopter: true,
		engineClient: &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("changed"))
		}},
		want: "kept",
	}, {
		name:    "the release is refused: x is kept",
		adopter: true,
		engineClient: &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("no"))
		}},
		want: "kept",
	}, {
		// A hand-over deletes nothing: two Bundles that swap objects would
		// otherwise wait for each other for good (see adoptedOrphans).
		name:     "a resource not Ready, another Bundle declares x to adopt it: x is released to it all the same",
		adopter:  true,
		notReady: true,
		want:     "released",
	}, {
		name:     "a resource not Ready, no Bundle adopts x: x is kept",
		notReady: true,
		want:     "kept",
		pending:  limbov1alpha1.PendingMessageWaitingForReady,
	}, {
		name:     "a resource not Ready, the adopter gone by the moment of the delete: x is kept, not deleted",
		adopter:  true,
		notReady: true,
		client: func() *interceptor.Funcs {
			var lists atomic.Int32
			return &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*limbov1alpha1.BundleList); ok && lists.Add(1) > 1 {
					return nil // the adopter is gone: an empty list
				}
				return c.List(ctx, list, opts...)
			}}
		}(),
		want:    "kept",
		pending: limbov1alpha1.PendingMessageWaitingForReady,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			resources := []limbov1alpha1.Resource{cmResource(t, "keep", nil)}
			var registry *plugin.Registry
			if tc.notReady {
				resources = append(resources, limbov1alpha1.Resource{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}})
				var err error
				if registry, err = plugin.NewRegistry(neverReady{}); err != nil {
					t.Fatal(err)
				}
			}
			b := livingBundle(resources...)
			objects := []client.Object{bundleConfigMap("keep", nil), bundleConfigMap("x", nil)}
			if tc.adopter {
				objects = append(objects, next.DeepCopy())
			}
			f := newTeardownFixture(t, b, registry, objects...)
			wrap := func(funcs *interceptor.Funcs) client.WithWatch {
				if funcs == nil {
					return f.c.(client.WithWatch)
				}
				return interceptor.NewClient(f.c.(client.WithWatch), *funcs)
			}
			f.r.Client = wrap(tc.client)
			f.r.APIReader = wrap(tc.apiReader)
			f.r.Engine.Reader = wrap(tc.engineReader)
			f.r.Engine.Client = wrap(tc.engineClient)
			_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			cm := f.liveConfigMap(t, "x")
			got := "kept"
			switch {
			case cm == nil:
				got = "gone"
			case !metav1.IsControlledBy(cm, b) && cm.Labels[limbov1alpha1.LabelPendingDeletion] == "true":
				got = "released"
			case !metav1.IsControlledBy(cm, b):
				got = "disowned"
			case cm.DeletionTimestamp != nil:
				got = "being deleted"
			}
			if got != tc.want {
				t.Errorf("x is %s, want %s", got, tc.want)
			}
			if tc.pending == "" {
				return
			}
			var entries []string
			for _, pd := range f.status(t).PendingDeletions {
				if pd.Name == "x" {
					entries = append(entries, pd.Message)
				}
			}
			if want := []string{tc.pending}; !reflect.DeepEqual(entries, want) {
				t.Errorf("x's pendingDeletions entries say %q, want %q", entries, want)
			}
		})
	}
}

// otherShard marks the objects the fixture's cache does not show: labelled
// for the shard a Bundle moved from (see decideUnseenOrphans).
const otherShard = "test.limbo.dev/other-shard"

// hideOtherShard is the reconciler's cache of a shard: its lists leave out the
// objects marked otherShard.
func hideOtherShard(c client.WithWatch) client.WithWatch {
	return cacheShowing(c, func(o client.Object) bool { return o.GetAnnotations()[otherShard] == "" })
}

// cacheShowing is a cache whose lists show only the objects shown accepts.
func cacheShowing(c client.WithWatch, shown func(client.Object) bool) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return err
		}
		var kept []runtime.Object
		for _, item := range items {
			if o, ok := item.(client.Object); !ok || shown(o) {
				kept = append(kept, item)
			}
		}
		return apimeta.SetList(list, kept)
	}})
}

// A Bundle moved to this shard in the write that dropped resource x: its
// object x carries the old shard's label, which this shard's cache does not
// select, so only the API server shows it (decideUnseenOrphans). x is decided
// like any orphan — deleted when every resource is Ready, held otherwise —
// and nothing else the API server shows is: keep (declared), y (an orphan the
// cache showed, in limbo already), released (a predecessor's, which the
// Bundle does not control).
func TestPassUnseenOrphans(t *testing.T) {
	stamp := "2020-01-01T00:00:00Z"
	hidden := func(cm *corev1.ConfigMap) *corev1.ConfigMap {
		cm.Annotations = map[string]string{otherShard: "old"}
		return cm
	}
	for _, tc := range []struct {
		name     string
		notReady bool
		// empty: the spec has no resources (and does not allowEmpty), and the
		// cache shows none of the objects.
		empty   bool
		kept    []string
		gone    []string
		pending []string
	}{{
		name:    "every resource Ready: x goes, once",
		kept:    []string{"keep", "y", "released"},
		gone:    []string{"x"},
		pending: []string{"y"},
	}, {
		name:     "a resource not Ready: x is held",
		notReady: true,
		kept:     []string{"keep", "y", "released", "x"},
		pending:  []string{"x", "y"},
	}, {
		name:    "an emptied spec: what only the API server shows is held",
		empty:   true,
		kept:    []string{"keep", "y", "released", "x"},
		pending: []string{"keep", "x", "y"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			registry, err := plugin.NewRegistry(neverReady{})
			if err != nil {
				t.Fatal(err)
			}
			resources := []limbov1alpha1.Resource{cmResource(t, "keep", nil)}
			if tc.empty {
				resources = nil
			}
			if tc.notReady {
				resources = append(resources, limbov1alpha1.Resource{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}})
			}
			b := livingBundle(resources...)
			b.Status.Resources = []limbov1alpha1.ResourceStatus{
				{Name: "keep", State: limbov1alpha1.ResourceReady, Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "keep"}},
				{Name: "x", State: limbov1alpha1.ResourceReady, Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "x"}},
			}
			released := releasedConfigMap("released", stamp)
			released.Annotations[otherShard] = "old"
			objects := []client.Object{
				bundleConfigMap("keep", nil),
				bundleConfigMap("y", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}),
				hidden(bundleConfigMap("x", nil)),
				released,
			}
			if tc.empty {
				for _, o := range objects {
					annotations := o.GetAnnotations()
					if annotations == nil {
						annotations = map[string]string{}
					}
					annotations[otherShard] = "old"
					o.SetAnnotations(annotations)
				}
			}
			f := newTeardownFixture(t, b, registry, objects...)
			f.r.Client = hideOtherShard(f.c.(client.WithWatch))
			before := map[string]string{}
			for _, o := range objects {
				before[o.GetName()] = f.liveConfigMap(t, o.GetName()).ResourceVersion
			}
			_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			for _, name := range tc.kept {
				switch cm := f.liveConfigMap(t, name); {
				case cm == nil:
					t.Errorf("ConfigMap %s was deleted", name)
				case !metav1.IsControlledBy(cm, b) && name != "released":
					t.Errorf("ConfigMap %s is no longer the Bundle's: %+v", name, cm.ObjectMeta)
				case name != "y" && name != "keep" && cm.ResourceVersion != before[name]: // keep is applied, y stamped
					t.Errorf("ConfigMap %s was written: %+v", name, cm.ObjectMeta)
				}
			}
			for _, name := range tc.gone {
				if cm := f.liveConfigMap(t, name); cm != nil {
					t.Errorf("ConfigMap %s is still there: %+v", name, cm.ObjectMeta)
				}
			}
			var got []string
			for _, pd := range f.status(t).PendingDeletions {
				got = append(got, pd.Name)
			}
			if !reflect.DeepEqual(got, tc.pending) {
				t.Errorf("pendingDeletions name %v, want %v", got, tc.pending)
			}
		})
	}
}

// inventoried is a plugin whose plan is Ready and inventories two orphans: the
// ConfigMap debris of the Bundle's namespace and the external item Thing 1.
type inventoried struct{}

func (inventoried) Describe() plugin.Description { return plugin.Description{Name: "inventoried"} }

func (inventoried) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	debris := &unstructured.Unstructured{}
	debris.SetGroupVersionKind(configMapGVK)
	if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: req.Bundle.Namespace, Name: "debris"}, debris); err != nil {
		return nil, err
	}
	return &plugin.Result{Ready: true, Inventory: &plugin.Inventory{
		Objects:       []plugin.ObjectItem{{Object: debris}},
		External:      []plugin.ExternalItem{{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}}},
		DesiredListed: 1,
	}}, nil
}

// A plugin's orphans — object items and external items — are decided with the
// Bundle's own: deleted, or given a Tombstone, only when every resource is
// Ready; held, untouched, while one is not.
func TestPassPluginItemsWaitForReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		notReady bool
	}{
		{name: "every resource Ready: the orphans go"},
		{name: "a resource not Ready: the orphans are held", notReady: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			registry, err := plugin.NewRegistry(neverReady{}, inventoried{})
			if err != nil {
				t.Fatal(err)
			}
			resources := []limbov1alpha1.Resource{{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "inventoried"}}}
			if tc.notReady {
				resources = append(resources, limbov1alpha1.Resource{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}})
			}
			b := livingBundle(resources...)
			debris := foreignConfigMap("debris", nil, "")
			f := newTeardownFixture(t, b, registry, debris)
			before := f.liveConfigMap(t, "debris").ResourceVersion
			// The pass that finds the plugin's plan decides its items.
			f.reconcileUntil(t, "sweep not Ready", f.resourceReady(t, "sweep"))
			var tombstones limbov1alpha1.TombstoneList
			if err := f.c.List(context.Background(), &tombstones, client.InNamespace("shop")); err != nil {
				t.Fatal(err)
			}
			cm := f.liveConfigMap(t, "debris")
			if !tc.notReady {
				if cm != nil {
					t.Errorf("debris is still there: %+v", cm.ObjectMeta)
				}
				if len(tombstones.Items) != 1 {
					t.Errorf("%d Tombstones, want 1 for Thing 1", len(tombstones.Items))
				}
				return
			}
			if cm == nil || cm.ResourceVersion != before {
				t.Errorf("debris was written or deleted while a resource is not Ready: %+v", cm)
			}
			if len(tombstones.Items) != 0 {
				t.Errorf("%d Tombstones while a resource is not Ready, want none", len(tombstones.Items))
			}
		})
	}
}

// slowSecondPlan is a plugin whose first plan inventories the external
// orphan Thing 1, and whose later plans run until release is closed: the
// passes meanwhile get the first plan's result as the last known state.
type slowSecondPlan struct {
	calls   *atomic.Int32
	release chan struct{}
}

func (slowSecondPlan) Describe() plugin.Description {
	return plugin.Description{Name: "slow-second-plan"}
}

func (p slowSecondPlan) Plan(ctx context.Context, _ plugin.Request) (*plugin.Result, error) {
	if p.calls.Add(1) > 1 {
		select {
		case <-p.release:
		case <-ctx.Done():
		}
	}
	return &plugin.Result{Ready: true, Inventory: &plugin.Inventory{
		External:      []plugin.ExternalItem{{ExternalItem: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}}},
		DesiredListed: 1,
	}}, nil
}

// A plan's inventory decides its items once, in the pass that takes it: a
// pass that only has the last known plan (the next one still runs) decides
// nothing from it. The item a Tombstone stood for, its Tombstone done and
// gone, is not given another on what an old plan said: it may exist again by
// now.
func TestPassActsOnAPlanOnce(t *testing.T) {
	slow := slowSecondPlan{calls: &atomic.Int32{}, release: make(chan struct{})}
	defer close(slow.release)
	registry, err := plugin.NewRegistry(slow)
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "sweep", Plugin: &limbov1alpha1.PluginResource{Name: "slow-second-plan"}})
	f := newTeardownFixture(t, b, registry)
	f.r.plans.wait = 10 * time.Millisecond // a pass waits for a plan that long, not plugin.CallWait
	ctx := context.Background()
	tombstones := func() []limbov1alpha1.Tombstone {
		var list limbov1alpha1.TombstoneList
		if err := f.c.List(ctx, &list, client.InNamespace("shop")); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	f.reconcileUntil(t, "no Tombstone for Thing 1", func() bool { return len(tombstones()) > 0 })
	// The Tombstone controller deleted Thing 1 and removed the Tombstone.
	for _, ts := range tombstones() {
		ts.Finalizers = nil
		if err := f.c.Update(ctx, &ts); err != nil {
			t.Fatal(err)
		}
		if err := f.c.Delete(ctx, &ts); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		_, _ = f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
		if n := len(tombstones()); n != 0 {
			t.Fatalf("%d Tombstones after a pass that had only the last known plan, want none", n)
		}
	}
	if state, _ := f.resourceState(t, "sweep"); state != limbov1alpha1.ResourceReady {
		t.Errorf("sweep: %s, want Ready on its last known plan", state)
	}
}

// A pass that cannot judge what is in limbo — the spec is invalid, or the
// orphans cannot be listed — keeps listing what the last status had there
// (and with it its kinds, which a teardown lists), and deletes nothing. A
// spec error still cancels the Tombstones of plugin resources that left
// (cancelling never deletes).
func TestPassThatCannotJudgeKeepsWhatIsInLimbo(t *testing.T) {
	invalid := limbov1alpha1.Resource{Name: "cfg", Object: &runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"!{nowhere}"}}`)}}
	failLists := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		switch list.(type) {
		case *limbov1alpha1.BundleList, *limbov1alpha1.TombstoneList:
			return c.List(ctx, list, opts...)
		}
		return apierrors.NewServiceUnavailable("the cache is away")
	}}
	for _, tc := range []struct {
		name      string
		resources func(t *testing.T) []limbov1alpha1.Resource
		client    *interceptor.Funcs
		// tombstoneCancelled: the Tombstone of resource gone, which left.
		tombstoneCancelled bool
	}{{
		name:               "the spec is invalid",
		resources:          func(*testing.T) []limbov1alpha1.Resource { return []limbov1alpha1.Resource{invalid} },
		tombstoneCancelled: true,
	}, {
		name: "the orphans cannot be listed",
		resources: func(t *testing.T) []limbov1alpha1.Resource {
			return []limbov1alpha1.Resource{cmResource(t, "keep", nil)}
		},
		client: failLists,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := livingBundle(tc.resources(t)...)
			status := limbov1alpha1.BundleStatus{ObservedGeneration: 1,
				ManagedKinds: []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}}
			setPending(&status, []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "x", Resource: "x",
				Message: limbov1alpha1.PendingMessageWaitingForReady}})
			b.Status = status
			yes := true
			ts := &limbov1alpha1.Tombstone{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-gone-thing-1", Labels: map[string]string{limbov1alpha1.LabelBundle: "web"},
					Finalizers:      []string{limbov1alpha1.FinalizerHardDelete},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}}},
				Spec: limbov1alpha1.TombstoneSpec{Plugin: "never-ready", Resource: "gone", Item: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}},
			}
			f := newTeardownFixture(t, b, nil, bundleConfigMap("x", nil), ts)
			if tc.client != nil {
				f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), *tc.client)
			}
			before := f.liveConfigMap(t, "x").ResourceVersion
			_, _ = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			if cm := f.liveConfigMap(t, "x"); cm == nil || cm.ResourceVersion != before {
				t.Errorf("x was deleted or written: %+v", cm)
			}
			st := f.status(t)
			found := false
			for _, pd := range st.PendingDeletions {
				found = found || pd.Name == "x"
			}
			if !found {
				t.Errorf("pendingDeletions = %+v, want x still listed", st.PendingDeletions)
			}
			if len(st.ManagedKinds) == 0 || st.ManagedKinds[0].Kind != "ConfigMap" {
				t.Errorf("managedKinds = %+v, want ConfigMap kept", st.ManagedKinds)
			}
			err := f.c.Get(context.Background(), client.ObjectKeyFromObject(ts), &limbov1alpha1.Tombstone{})
			if cancelled := apierrors.IsNotFound(err); cancelled != tc.tombstoneCancelled {
				t.Errorf("the Tombstone of resource gone cancelled: %v (%v), want %v", cancelled, err, tc.tombstoneCancelled)
			}
		})
	}
}

// An empty spec that leaves nothing behind is no trouble: the guard against an
// emptied spec speaks only when there is something it keeps from deletion.
func TestPassEmptySpecWithNothingToDelete(t *testing.T) {
	b := livingBundle()
	f := newTeardownFixture(t, b, nil)
	f.reconcile(t)
	if c := apimeta.FindStatusCondition(f.status(t).Conditions, limbov1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", c)
	}
}

// An orphan the engine must read and decide again (its write met a Conflict, or
// its Bundle's generation moved past the cache) brings the pass back after
// conflictRetry, not at once: the cache shows the new version only once its
// watch delivers it (seconds after an API server restart), and a pass every
// millisecond, served before every event-driven one and starting a plugin plan
// each time, would conflict again until then.
func TestReadAgainIsNotAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	p := newPass(&Reconciler{Clock: clk}, livingBundle())
	p.collect(nil, time.Time{}, true, nil)
	if got := p.result().RequeueAfter; got < conflictRetry {
		t.Errorf("requeue after %v, want at least conflictRetry (%v)", got, conflictRetry)
	}
	// A countdown ending sooner still wins.
	p.collect(nil, clk.Now().Add(10*time.Millisecond), true, nil)
	if got := p.result().RequeueAfter; got != 10*time.Millisecond {
		t.Errorf("requeue after %v, want the deadline's 10ms", got)
	}
}
