package bundle

import (
	"context"
	"slices"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

func TestOrphanedByCollector(t *testing.T) {
	controller := []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "b-1", Controller: ptr.To(true)}}
	for _, tc := range []struct {
		name        string
		owners      []metav1.OwnerReference
		annotations map[string]string
		labels      map[string]string
		want        bool
	}{
		{name: "controlled", owners: controller},
		{name: "no controller, not released: the collector's work", want: true},
		{name: "an owner that is not a controller", owners: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "x", UID: "x"}}, want: true},
		{name: "released by a teardown", annotations: map[string]string{limbov1alpha1.AnnotationReleased: "2026-11-22T00:00:00Z"}},
		{name: "in limbo", labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &unstructured.Unstructured{}
			o.SetOwnerReferences(tc.owners)
			o.SetAnnotations(tc.annotations)
			o.SetLabels(tc.labels)
			if got := orphanedByCollector(o); got != tc.want {
				t.Errorf("orphanedByCollector = %v, want %v", got, tc.want)
			}
		})
	}
}

// The Bundle's watch events are remembered for the cascade finalizer they
// carried: the garbage collector may remove it before the teardown's first
// look (at once for --cascade=foreground when the dependents are elsewhere).
func TestCascadesRememberTheFinalizer(t *testing.T) {
	bundle := func(uid string, deleting bool, finalizers ...string) *limbov1alpha1.Bundle {
		b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: types.UID("u-" + uid), Finalizers: finalizers}}
		if deleting {
			b.DeletionTimestamp = &metav1.Time{}
		}
		return b
	}
	var c cascades
	p := c.predicate()
	live := bundle("1", false, limbov1alpha1.FinalizerTeardown)
	orphaning := bundle("1", true, metav1.FinalizerOrphanDependents, limbov1alpha1.FinalizerTeardown)
	orphaned := bundle("1", true, limbov1alpha1.FinalizerTeardown) // the collector is done
	background := bundle("2", true, limbov1alpha1.FinalizerTeardown)
	foreground := bundle("3", true, metav1.FinalizerDeleteDependents, limbov1alpha1.FinalizerTeardown)
	foregroundDone := bundle("3", true, limbov1alpha1.FinalizerTeardown)
	const orphan, fg = metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents

	steps := []struct {
		name string
		run  func() bool
		uid  string
		want string
	}{
		{"a live Bundle", func() bool { return p.Create(event.CreateEvent{Object: live}) }, "1", ""},
		{"deleted with --cascade=orphan", func() bool { return p.Update(event.UpdateEvent{ObjectOld: live, ObjectNew: orphaning}) }, "1", orphan},
		{"the collector removed its finalizer", func() bool { return p.Update(event.UpdateEvent{ObjectOld: orphaning, ObjectNew: orphaned}) }, "1", orphan},
		{"a second delete asked for foreground: orphan stays", func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: orphaned, ObjectNew: bundle("1", true, fg, limbov1alpha1.FinalizerTeardown)})
		}, "1", orphan},
		{"another Bundle deleted in the background", func() bool { return p.Create(event.CreateEvent{Object: background}) }, "2", ""},
		{"a third deleted with --cascade=foreground", func() bool { return p.Create(event.CreateEvent{Object: foreground}) }, "3", fg},
		{"the collector removed foregroundDeletion", func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: foreground, ObjectNew: foregroundDone})
		}, "3", fg},
		// An etcd restored from a snapshot taken before the delete: the
		// Bundle is not being deleted again, and its next plain delete was
		// taken for the foreground one.
		{"undeleted by an etcd restore", func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: foregroundDone, ObjectNew: bundle("3", false, limbov1alpha1.FinalizerTeardown)})
		}, "3", ""},
		{"its history read back while it was being deleted is forgotten too", func() bool {
			c.readBack.Store(bundle("3", false).UID, uint64(1000))
			ok := p.Update(event.UpdateEvent{ObjectOld: foregroundDone, ObjectNew: bundle("3", false, limbov1alpha1.FinalizerTeardown)})
			if _, kept := c.readBack.Load(bundle("3", false).UID); kept {
				t.Error("the history read back before an etcd restore is kept: a later delete's history below it is not read")
			}
			return ok
		}, "3", ""},
		{"deleted again in the background", func() bool {
			return p.Update(event.UpdateEvent{ObjectOld: bundle("3", false, limbov1alpha1.FinalizerTeardown), ObjectNew: foregroundDone})
		}, "3", ""},
		{"gone", func() bool { return p.Delete(event.DeleteEvent{Object: orphaned}) }, "1", ""},
		{"a live Bundle that carries orphan: no cascade until it is deleted", func() bool {
			return p.Create(event.CreateEvent{Object: bundle("4", false, orphan, limbov1alpha1.FinalizerTeardown)})
		}, "4", ""},
	}
	for _, s := range steps {
		if !s.run() {
			t.Errorf("%s: the predicate dropped the event; it must let every event through", s.name)
		}
		if got := c.cascade(bundle(s.uid, false).UID); got != s.want {
			t.Errorf("%s: remembered %q, want %q", s.name, got, s.want)
		}
	}
}

func TestDeletedWithOrphanCascade(t *testing.T) {
	declared := &bundlespec.Plan{Objects: map[string]string{bundlespec.ObjectKey(schema.GroupKind{Kind: "ConfigMap"}, "db"): "db"}}
	object := func(name string, controlled bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		u.SetUID(types.UID("uid-" + name))
		if controlled {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "b-1", Controller: ptr.To(true)}})
		}
		return u
	}
	// recorded is a status whose resource db is in state, its object's UID
	// uid and its appliedDigest digest ("": none).
	recorded := func(state limbov1alpha1.ResourceState, uid, digest string) limbov1alpha1.BundleStatus {
		return limbov1alpha1.BundleStatus{Resources: []limbov1alpha1.ResourceStatus{{Name: "db", State: state, AppliedDigest: digest,
			Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "db", UID: uid}}}}
	}
	for _, tc := range []struct {
		name       string
		finalizers []string
		remembered string // the cascade finalizer the Bundle was seen with
		plan       *bundlespec.Plan
		status     limbov1alpha1.BundleStatus
		objects    []*unstructured.Unstructured
		want       bool
	}{
		{name: "the orphan finalizer", finalizers: []string{metav1.FinalizerOrphanDependents}, want: true},
		{name: "seen with the orphan finalizer", remembered: metav1.FinalizerOrphanDependents, want: true},
		{name: "seen with foregroundDeletion: not orphan", remembered: metav1.FinalizerDeleteDependents},
		{name: "declared objects still controlled: background", plan: declared, status: recorded(limbov1alpha1.ResourceReady, "uid-db", "d"),
			objects: []*unstructured.Unstructured{object("db", true)}},
		{name: "a declared object lost its controller: the collector orphaned it", plan: declared, status: recorded(limbov1alpha1.ResourceReady, "uid-db", "d"),
			objects: []*unstructured.Unstructured{object("db", false)}, want: true},
		{name: "applied, then blocked by a dependency: the digest stays, and so does the evidence", plan: declared,
			status: recorded(limbov1alpha1.ResourceBlocked, "uid-db", "d"), objects: []*unstructured.Unstructured{object("db", false)}, want: true},
		{name: "Ready without a digest (a Secret has none): the Bundle's", plan: declared,
			status: recorded(limbov1alpha1.ResourceReady, "uid-db", ""), objects: []*unstructured.Unstructured{object("db", false)}, want: true},
		{name: "an undeclared object without a controller is no evidence", plan: declared, objects: []*unstructured.Unstructured{object("other", false)}},
		{name: "no plan (an invalid spec): no evidence", status: recorded(limbov1alpha1.ResourceReady, "uid-db", "d"), objects: []*unstructured.Unstructured{object("db", false)}},
		// A labelled object without a controller that the Bundle never had: a
		// predecessor's left by --cascade=orphan, which a Blocked resource
		// writes nothing to adopt, or anyone's who may create one in the
		// namespace. Taken for evidence, it turned a plain delete into an
		// orphaning one: nothing deleted.
		{name: "no status: a stray labelled object is no evidence", plan: declared, objects: []*unstructured.Unstructured{object("db", false)}},
		{name: "db Blocked, no object recorded: no evidence", plan: declared,
			status: recorded(limbov1alpha1.ResourceBlocked, "", ""), objects: []*unstructured.Unstructured{object("db", false)}},
		{name: "db's entry records another object: no evidence", plan: declared,
			status: recorded(limbov1alpha1.ResourceReady, "uid-earlier", "d"), objects: []*unstructured.Unstructured{object("db", false)}},
		{name: "db Blocked on the object found in its place, never applied: no evidence", plan: declared,
			status: recorded(limbov1alpha1.ResourceBlocked, "uid-db", ""), objects: []*unstructured.Unstructured{object("db", false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "b-1", Finalizers: tc.finalizers}, Status: tc.status}
			r := &Reconciler{}
			if tc.remembered != "" {
				r.cascades.uids.Store(b.UID, tc.remembered)
			}
			if got := r.deletedWithOrphanCascade(b, tc.plan, tc.objects); got != tc.want {
				t.Errorf("deletedWithOrphanCascade = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCascadeInHistory(t *testing.T) {
	// version is the Bundle's metadata at a resource version.
	version := func(rv string, uid types.UID, deleting bool, finalizers ...string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: uid, ResourceVersion: rv, Finalizers: finalizers}}
		if deleting {
			m.DeletionTimestamp = &metav1.Time{}
		}
		return m
	}
	const uid = "b-1"
	expired := apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	for _, tc := range []struct {
		name     string
		current  string
		readBack uint64
		// history maps the resource version read at (rv-1) to what the API
		// server answers there.
		history map[uint64]*metav1.PartialObjectMetadata
		errs    map[uint64]error
		want    string // the cascade finalizer found
		wantErr bool
		// reads are the resource versions read, in order.
		reads []uint64
	}{{
		name:    "deleted in the background, seen live: the version before has no deletionTimestamp",
		current: "20",
		history: map[uint64]*metav1.PartialObjectMetadata{19: version("12", uid, false, limbov1alpha1.FinalizerTeardown)},
		reads:   []uint64{19},
	}, {
		name:    "the collector removed orphan: the version before carried it",
		current: "30",
		history: map[uint64]*metav1.PartialObjectMetadata{29: version("25", uid, true, metav1.FinalizerOrphanDependents, limbov1alpha1.FinalizerTeardown)},
		want:    metav1.FinalizerOrphanDependents,
		reads:   []uint64{29},
	}, {
		name:    "the collector removed foregroundDeletion: the version before carried it",
		current: "30",
		history: map[uint64]*metav1.PartialObjectMetadata{29: version("25", uid, true, metav1.FinalizerDeleteDependents, limbov1alpha1.FinalizerTeardown)},
		want:    metav1.FinalizerDeleteDependents,
		reads:   []uint64{29},
	}, {
		name:    "orphan further back, behind the teardown's status writes",
		current: "40",
		history: map[uint64]*metav1.PartialObjectMetadata{
			39: version("35", uid, true, limbov1alpha1.FinalizerTeardown),
			34: version("30", uid, true, limbov1alpha1.FinalizerTeardown),
			29: version("21", uid, true, metav1.FinalizerOrphanDependents, limbov1alpha1.FinalizerTeardown),
		},
		want:  metav1.FinalizerOrphanDependents,
		reads: []uint64{39, 34, 29},
	}, {
		name:     "read back before down to 30: stops there",
		current:  "40",
		readBack: 30,
		history: map[uint64]*metav1.PartialObjectMetadata{
			39: version("35", uid, true, limbov1alpha1.FinalizerTeardown),
			34: version("30", uid, true, limbov1alpha1.FinalizerTeardown),
		},
		reads: []uint64{39, 34},
	}, {
		name:     "nothing new since the last read",
		current:  "40",
		readBack: 40,
	}, {
		name:    "another Bundle of the same name before: not this one's history",
		current: "20",
		history: map[uint64]*metav1.PartialObjectMetadata{19: version("15", "b-0", true, metav1.FinalizerOrphanDependents)},
		reads:   []uint64{19},
	}, {
		name:    "a version before that is not older: stops, whatever is further back",
		current: "20",
		history: map[uint64]*metav1.PartialObjectMetadata{
			19: version("25", uid, true, limbov1alpha1.FinalizerTeardown),
			24: version("10", uid, true, metav1.FinalizerOrphanDependents),
		},
		reads: []uint64{19},
	}, {
		name:    "no Bundle of the name then",
		current: "20",
		reads:   []uint64{19},
	}, {
		name:    "history compacted: tells nothing",
		current: "20",
		errs:    map[uint64]error{19: expired},
		reads:   []uint64{19},
	}, {
		name:    "any other error leaves the mode undecided",
		current: "20",
		errs:    map[uint64]error{19: apierrors.NewServiceUnavailable("etcd")},
		wantErr: true,
		reads:   []uint64{19},
	}, {
		name:    "a resource version that is not an integer: no history",
		current: "abc",
	}, {
		name:    "a longer history than historyDepth: stops",
		current: "1000",
		history: func() map[uint64]*metav1.PartialObjectMetadata {
			h := map[uint64]*metav1.PartialObjectMetadata{}
			for rv := uint64(1000); rv > 900; rv-- {
				h[rv-1] = version(strconv.FormatUint(rv-1, 10), uid, true, limbov1alpha1.FinalizerTeardown)
			}
			h[899] = version("899", uid, true, metav1.FinalizerOrphanDependents)
			return h
		}(),
		reads: func() []uint64 {
			var reads []uint64
			for i := range uint64(historyDepth) {
				reads = append(reads, 999-i)
			}
			return reads
		}(),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid, ResourceVersion: tc.current}}
			var reads []uint64
			before := func(_ context.Context, key types.NamespacedName, rv uint64) (*metav1.PartialObjectMetadata, error) {
				if key != (types.NamespacedName{Namespace: "team-a", Name: "shop"}) {
					t.Errorf("read %v, want team-a/shop", key)
				}
				reads = append(reads, rv-1)
				return tc.history[rv-1], tc.errs[rv-1]
			}
			got, err := cascadeInHistory(context.Background(), b, tc.readBack, before)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("cascadeInHistory = %q, want %q", got, tc.want)
			}
			if !slices.Equal(reads, tc.reads) {
				t.Errorf("read at %v, want %v", reads, tc.reads)
			}
		})
	}
}
