package bundle

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/shard"
)

// A sharded controller whose cache still shows a Bundle that the API server
// shows moved to another shard, or changed since (a watch reconnecting after
// a kube-apiserver restart took seconds in the soak, seed 341751649), decided
// on a spec that no longer holds: it must not apply it, nor act on the
// Bundle's orphans — no stamp, no Tombstone cancelled — nor write its status,
// which is the other shard's (or the next pass's) now. While the API server
// shows the Bundle as the cache does, the pass acts as usual.
func TestPassOfABundleThatLeftTheShard(t *testing.T) {
	sel, registry := shardA(t)
	for _, tc := range []struct {
		name string
		// apiLabels and apiGeneration are the Bundle's as the API server
		// shows them; the cache's are limbo.dev/shard=a and 1.
		apiLabels     map[string]string
		apiGeneration int64
		acts          bool
		// invalid: the cached spec has an error (a delay "banana"), which the
		// user fixed in the write that moved the Bundle: a pass of it writes
		// only its status (seed 743617509).
		invalid bool
	}{
		{name: "still in the shard", apiLabels: map[string]string{"limbo.dev/shard": "a"}, apiGeneration: 1, acts: true},
		{name: "moved to another shard", apiLabels: nil, apiGeneration: 1},
		{name: "moved to another shard with a spec change", apiLabels: map[string]string{"limbo.dev/shard": "b"}, apiGeneration: 2},
		{name: "changed since", apiLabels: map[string]string{"limbo.dev/shard": "a"}, apiGeneration: 2},
		{name: "a spec error, still in the shard", apiLabels: map[string]string{"limbo.dev/shard": "a"}, apiGeneration: 1, invalid: true, acts: true},
		{name: "a spec error, moved to another shard", apiLabels: nil, apiGeneration: 2, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keepAnnotations map[string]string
			if tc.invalid {
				keepAnnotations = map[string]string{limbov1alpha1.AnnotationDeletionDelay: "banana"}
			}
			b := livingBundle(cmResource(t, "keep", keepAnnotations))
			b.Labels = map[string]string{"limbo.dev/shard": "a"}
			inShard := func(o client.Object) client.Object {
				o.SetLabels(map[string]string{limbov1alpha1.LabelBundle: "web", "limbo.dev/shard": "a"})
				return o
			}
			// A Tombstone of a plugin resource that left the spec: cancelled
			// by a pass that acts.
			yes := true
			ts := &limbov1alpha1.Tombstone{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-sweep-thing-1", Labels: map[string]string{limbov1alpha1.LabelBundle: "web", "limbo.dev/shard": "a"},
					Finalizers:      []string{limbov1alpha1.FinalizerHardDelete},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}}},
				Spec: limbov1alpha1.TombstoneSpec{Plugin: "old-plugin", Resource: "sweep", Item: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}},
			}
			f := newTeardownFixture(t, b, registry, inShard(bundleConfigMap("keep", nil)),
				inShard(bundleConfigMap("y", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"})), ts)
			f.r.Shard, f.r.Engine.Shard = sel, sel
			f.r.APIReader = movedBundle{Reader: f.c, labels: tc.apiLabels, generation: tc.apiGeneration}
			events := make(chan string, 16)
			f.r.Recorder = &record.FakeRecorder{Events: events}
			before, keepBefore := f.liveConfigMap(t, "y").ResourceVersion, f.liveConfigMap(t, "keep").ResourceVersion

			result, _ := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			close(events)
			var announced []string
			for e := range events {
				announced = append(announced, e)
			}

			cancelled := apierrors.IsNotFound(f.c.Get(context.Background(), client.ObjectKeyFromObject(ts), &limbov1alpha1.Tombstone{}))
			if cancelled != tc.acts {
				t.Errorf("the Tombstone of the resource that left was cancelled: %v, want %v", cancelled, tc.acts)
			}
			y := f.liveConfigMap(t, "y")
			stamped := y.Labels[limbov1alpha1.LabelPendingDeletion] == "true"
			written := len(f.status(t).PendingDeletions) > 0
			if tc.invalid {
				// A spec error writes nothing but its status.
				written, stamped = len(f.status(t).Conditions) > 0, false
			}
			switch {
			case tc.acts && tc.invalid && !written:
				t.Errorf("the status of the spec error was not written: %+v", f.status(t))
			case tc.acts && !tc.invalid && (!stamped || !written):
				t.Errorf("y stamped %v, listed in the status %v: want both", stamped, written)
			case !tc.acts && (stamped || y.ResourceVersion != before):
				t.Errorf("y was written: %+v", y.ObjectMeta)
			case !tc.acts && f.liveConfigMap(t, "keep").ResourceVersion != keepBefore:
				t.Errorf("keep was applied from the spec the cache showed: %+v", f.liveConfigMap(t, "keep").ObjectMeta)
			case !tc.acts && written:
				t.Errorf("the status was written: %+v", f.status(t))
			case !tc.acts && result.RequeueAfter == 0:
				t.Errorf("Reconcile = %+v: want a retry, in case no event brings the change", result)
			}
			// The pass's events announce what its status says: a pass that
			// writes no status announces nothing (the InvalidSpec of a spec the
			// user fixed in the moving write would mislead).
			invalidAnnounced := slices.ContainsFunc(announced, func(e string) bool {
				return strings.HasPrefix(e, "Warning "+limbov1alpha1.ReasonInvalidSpec+" ")
			})
			switch {
			case !tc.acts && len(announced) > 0:
				t.Errorf("a pass that wrote no status emitted events: %q", announced)
			case tc.acts && tc.invalid && !invalidAnnounced:
				t.Errorf("the spec error was not announced: events %q", announced)
			}
		})
	}
}

// movedBundle is the API server's view of a Bundle that moved: its Bundle
// reads (metadata) show labels and generation instead of the stored ones.
type movedBundle struct {
	client.Reader
	labels     map[string]string
	generation int64
}

func (m movedBundle) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := m.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if pm, ok := obj.(*metav1.PartialObjectMetadata); ok && pm.Kind == "Bundle" {
		pm.Labels, pm.Generation = m.labels, m.generation
	}
	return nil
}

// A Bundle new to a sharded controller's cache (moved into its shard, or the
// controller started) may have objects that another shard labelled and that
// no hint of its status names any more: a spec error's pass rewrote
// status.resources without their objects (seed 606416444). The first pass that
// judges orphans looks for every kind the Bundle uses with the API server: x,
// dropped from the spec, is moved into the shard and counts down; the pass
// after asks nothing more.
func TestPassOfABundleNewToTheShardLooksForItsObjects(t *testing.T) {
	sel, registry := shardA(t)
	b := livingBundle(cmResource(t, "keep", nil))
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	// The status a spec error's pass wrote: the resource, no object named.
	b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "keep", State: limbov1alpha1.ResourceBlocked, Reason: limbov1alpha1.ReasonInvalidSpec}}
	keep := bundleConfigMap("keep", nil)
	keep.Labels["limbo.dev/shard"] = "a"
	x := bundleConfigMap("x", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}) // the rest's
	f := newTeardownFixture(t, b, registry, keep, x)
	f.r.Shard, f.r.Engine.Shard = sel, sel
	var lists int
	f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool { return sel.Matches(o.GetLabels()) })
	f.r.APIReader = countingReads{Reader: f.c, lists: &lists}

	for pass := range 2 {
		if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if pass == 0 {
			if got := f.liveConfigMap(t, "x"); got.Labels["limbo.dev/shard"] != "a" || got.Labels[limbov1alpha1.LabelPendingDeletion] != "true" {
				t.Fatalf("x after the first pass: labels %v: want it moved into shard a and counting down", got.Labels)
			}
			lists = 0
		}
	}
	if lists != 0 {
		t.Errorf("the second pass listed %d times with the API server: want none", lists)
	}
}

// A sharded controller's start finds every Bundle new to it, and the first
// pass of each looks for its objects with the API server (decideUnseenOrphans).
// For a Bundle with nothing unaccounted that listing is all it sends: the shard
// check (a read of the Bundle again) guards the writes the listing leads to,
// and there are none — at a restart of 500 Bundles per shard at QPS 50 it cost
// ~10 s before users' changes were looked at. An object the listing finds of
// the shard the Bundle came from is moved in and counts down, after the check;
// one found when the Bundle has left the shard (the cache is behind) is left
// alone, and its kind stays in status.managedKinds.
func TestOnboardingReadsTheBundleAgainOnlyBeforeAWrite(t *testing.T) {
	sel, registry := shardA(t)
	for _, tc := range []struct {
		name string
		// orphan: the API server also has x, dropped from the spec, labelled
		// with the shard the Bundle came from (the cache does not show it).
		orphan bool
		// apiLabels are the Bundle's labels as the API server shows them.
		apiLabels       map[string]string
		wantBundleReads int
		wantMoved, kept bool
	}{
		{name: "nothing unaccounted", apiLabels: map[string]string{"limbo.dev/shard": "a"}},
		{name: "nothing unaccounted, the Bundle left the shard", apiLabels: nil},
		{name: "an orphan of the old shard", orphan: true, apiLabels: map[string]string{"limbo.dev/shard": "a"}, wantBundleReads: 1, wantMoved: true},
		{name: "an orphan, the Bundle left the shard", orphan: true, apiLabels: nil, wantBundleReads: 1, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := livingBundle(cmResource(t, "keep", nil))
			b.Labels = map[string]string{"limbo.dev/shard": "a"}
			keep := bundleConfigMap("keep", nil)
			keep.Labels["limbo.dev/shard"] = "a"
			objects := []client.Object{keep}
			if tc.orphan {
				objects = append(objects, bundleConfigMap("x", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
			}
			f := newTeardownFixture(t, b, registry, objects...)
			f.r.Shard, f.r.Engine.Shard = sel, sel
			f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool { return sel.Matches(o.GetLabels()) })
			var lists, bundleReads int
			f.r.APIReader = countingReads{Reader: movedBundle{Reader: f.c, labels: tc.apiLabels, generation: b.Generation}, lists: &lists, bundleReads: &bundleReads}
			xBefore := ""
			if tc.orphan {
				xBefore = f.liveConfigMap(t, "x").ResourceVersion
			}

			p := newPass(f.r, b)
			if !p.planSpec(context.Background()) {
				t.Fatalf("spec errors: %v", p.specErrs)
			}
			p.decideUnseenOrphans(context.Background(), true)

			if lists != 1 || bundleReads != tc.wantBundleReads {
				t.Errorf("listed %d times and read the Bundle again %d times: want 1 listing and %d reads", lists, bundleReads, tc.wantBundleReads)
			}
			if tc.orphan {
				x := f.liveConfigMap(t, "x")
				moved := x.Labels["limbo.dev/shard"] == "a" && x.Labels[limbov1alpha1.LabelPendingDeletion] == "true"
				switch {
				case moved != tc.wantMoved:
					t.Errorf("x moved into shard a and counting down: %v, want %v (labels %v)", moved, tc.wantMoved, x.Labels)
				case !tc.wantMoved && x.ResourceVersion != xBefore:
					t.Errorf("x was written: %+v", x.ObjectMeta)
				}
			}
			if kept := len(p.keptKinds) > 0; kept != tc.kept {
				t.Errorf("kinds kept in status.managedKinds: %v, want any: %v", p.keptKinds, tc.kept)
			}
			if onboarded := f.r.onboarded.has(b); onboarded == tc.kept {
				t.Errorf("the Bundle counts as looked for: %v, want %v", onboarded, !tc.kept)
			}
		})
	}
}

// countingReads counts a Reader's lists and, when bundleReads is set, its
// reads of a Bundle.
type countingReads struct {
	client.Reader
	lists, bundleReads *int
}

func (c countingReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	*c.lists++
	return c.Reader.List(ctx, list, opts...)
}

func (c countingReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if pm, ok := obj.(*metav1.PartialObjectMetadata); ok && pm.Kind == "Bundle" && c.bundleReads != nil {
		*c.bundleReads++
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A Bundle deleted after it moved to this shard may have objects that still
// carry the old shard's label — a resource Blocked since the move (its gate not
// Ready) was never applied again — which this shard's cache does not select.
// The teardown must still go in reverse dependency order: app, which depends
// on db, is released before db, not after (seed 101963686: the waves saw only
// db, released it, and app went later, found by the final listing).
func TestTeardownOfABundleMovedToTheShardKeepsTheOrder(t *testing.T) {
	f, b := movedTeardown(t, "") // app still the old shard's: no label of shard a

	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
		t.Fatal(err)
	}
	appReleased := metav1.GetControllerOf(f.liveConfigMap(t, "app")) == nil
	dbReleased := metav1.GetControllerOf(f.liveConfigMap(t, "db")) == nil
	if !appReleased || dbReleased {
		t.Errorf("after the teardown's first wave: app released %v, db released %v; want app first, db still the Bundle's", appReleased, dbReleased)
	}
}

// A Bundle relabelled into another shard while being deleted is the other
// shard's to tear down; a shard whose cache still shows it in the shard (its
// watch reconnecting) would tear it down beside that one — releases and
// deletes twice, each shard's events and status writes. A teardown pass asks
// the API server first, as a pass does before its first write, and makes no
// write for a Bundle that left the shard.
func TestTeardownOfABundleThatLeftTheShard(t *testing.T) {
	sel, registry := shardA(t)
	for _, tc := range []struct {
		name      string
		apiLabels map[string]string
		acts      bool
	}{
		{name: "still in the shard", apiLabels: map[string]string{"limbo.dev/shard": "a"}, acts: true},
		{name: "moved to another shard", apiLabels: map[string]string{"limbo.dev/shard": "b"}},
		{name: "moved to the rest", apiLabels: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := deletedBundle([]limbov1alpha1.Resource{cmResource(t, "db", nil)}, limbov1alpha1.BundleStatus{})
			b.Labels = map[string]string{"limbo.dev/shard": "a"}
			db := bundleConfigMap("db", nil)
			db.Labels["limbo.dev/shard"] = "a"
			f := newTeardownFixture(t, b, registry, db)
			f.r.Shard, f.r.Engine.Shard = sel, sel
			f.r.APIReader = movedBundle{Reader: f.c, labels: tc.apiLabels, generation: b.Generation}
			events := make(chan string, 16)
			f.r.Recorder = &record.FakeRecorder{Events: events}

			result, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			close(events)
			gone := apierrors.IsNotFound(f.c.Get(context.Background(), client.ObjectKeyFromObject(db), &corev1.ConfigMap{}))
			switch {
			case err != nil && tc.acts:
				t.Fatalf("Reconcile: %v", err)
			case gone != tc.acts:
				t.Errorf("db deleted: %v, want %v", gone, tc.acts)
			case !tc.acts && len(events) > 0:
				t.Errorf("a teardown of a Bundle that left the shard emitted events: %d", len(events))
			case !tc.acts && len(f.status(t).Resources)+len(f.status(t).Conditions) > 0:
				t.Errorf("a teardown of a Bundle that left the shard wrote its status: %+v", f.status(t))
			case !tc.acts && result.RequeueAfter == 0:
				t.Errorf("Reconcile = %+v: want a retry, in case no event brings the change", result)
			}
		})
	}
}

// A sharded teardown lists the Bundle's objects with the API server at its
// start (its cache does not select what another shard labelled). Its last pass
// — nothing left to delete or release — lets the Bundle go on that listing:
// nothing was written since, so a second one (letGo's) would show the same.
// One LIST per kind per deleted Bundle, where it was two.
func TestShardedTeardownsLastPassListsOnce(t *testing.T) {
	sel, registry := shardA(t)
	b := deletedBundle([]limbov1alpha1.Resource{cmResource(t, "db", nil)}, limbov1alpha1.BundleStatus{})
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	f := newTeardownFixture(t, b, registry)
	f.r.Shard, f.r.Engine.Shard = sel, sel
	var lists int
	f.r.APIReader = countingReads{Reader: f.c, lists: &lists}

	f.reconcile(t)
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &limbov1alpha1.Bundle{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Bundle after its teardown's last pass: %v, want it gone (its finalizer removed)", err)
	}
	if lists != 2 {
		t.Errorf("the teardown's last pass listed %d times with the API server: want 2 (one kind, once; the Bundle's Tombstones, once)", lists)
	}
}

// shardA is the selector of shard a, and a registry without plugins.
func shardA(t *testing.T) (*shard.Selector, *plugin.Registry) {
	t.Helper()
	sel, err := shard.Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}
	registry, err := plugin.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	return sel, registry
}

// A Bundle moved into the shard while a resource of it is Blocked (its gate not
// Ready): the resource's object, of the old shard, was declared, so the
// onboarding pass did not move it in, and Blocked, so no apply moved it either.
// Once the spec dropped the resource, this shard's cache did not show it: it
// was neither listed nor deleted at its deadline (seed 200868468: the Bundle's
// teardown found it, 6 s late). The onboarding pass moves in every object of the
// Bundle it finds outside the shard, declared or not.
func TestOnboardingMovesInABlockedResourcesObject(t *testing.T) {
	sel, _ := shardA(t)
	registry, err := plugin.NewRegistry(neverReady{})
	if err != nil {
		t.Fatal(err)
	}
	b := livingBundle(limbov1alpha1.Resource{Name: "gate", Plugin: &limbov1alpha1.PluginResource{Name: "never-ready"}}, cmResource(t, "blocked", nil, "gate"))
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	f := newTeardownFixture(t, b, registry, bundleConfigMap("blocked", nil)) // the old shard's
	f.r.Shard, f.r.Engine.Shard = sel, sel
	f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool { return sel.Matches(o.GetLabels()) })
	f.r.APIReader = f.c
	f.r.plans.wait = 10 * time.Millisecond
	f.reconcileUntil(t, "blocked not Blocked", func() bool {
		state, _ := f.resourceState(t, "blocked")
		return state == limbov1alpha1.ResourceBlocked
	})
	if got := f.liveConfigMap(t, "blocked").Labels; got["limbo.dev/shard"] != "a" {
		t.Fatalf("blocked's labels after the Bundle's first passes in shard a: %v, want it moved into shard a", got)
	}

	f.editResources(t, func(r []limbov1alpha1.Resource) []limbov1alpha1.Resource { return r[:1] })
	f.reconcile(t)
	if pending := f.status(t).PendingDeletions; len(pending) != 1 || pending[0].Name != "blocked" {
		t.Errorf("pendingDeletions after the spec dropped blocked: %+v, want blocked", pending)
	}
}

// A pass that asked whether the Bundle is still in the shard (before an apply,
// say) and then lists the Bundle's objects with the API server may find what
// the shard the Bundle moved to wrote since: the listing is newer than the
// answer. Seed 166862835: shard a's onboarding pass found b2-r2 out of limbo —
// the other shard had cancelled its countdown, the moved Bundle declaring it
// again — and, on its answer from before the move, moved it in and stamped it.
// What the listing leads to is asked for again, after it.
func TestOnboardingAsksAgainAfterTheListing(t *testing.T) {
	sel, registry := shardA(t)
	b := livingBundle(cmResource(t, "keep", nil))
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	keep := bundleConfigMap("keep", nil)
	keep.Labels["limbo.dev/shard"] = "a"
	f := newTeardownFixture(t, b, registry, keep, bundleConfigMap("x", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	f.r.Shard, f.r.Engine.Shard = sel, sel
	f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool { return sel.Matches(o.GetLabels()) })
	moved := &movingBundle{Reader: f.c, after: 1}
	f.r.APIReader = moved
	xBefore := f.liveConfigMap(t, "x").ResourceVersion

	p := newPass(f.r, b)
	if !p.planSpec(context.Background()) {
		t.Fatalf("spec errors: %v", p.specErrs)
	}
	if !p.stillInShard(context.Background()) { // the apply's check: still in shard a
		t.Fatal("the first read of the Bundle says it left shard a")
	}
	p.decideUnseenOrphans(context.Background(), true)

	if x := f.liveConfigMap(t, "x"); x.ResourceVersion != xBefore {
		t.Errorf("x was written by a pass of a Bundle that left the shard before the listing: %+v", x.ObjectMeta)
	}
	if moved.reads != 2 {
		t.Errorf("read the Bundle %d times, want 2: the check, and again before the listing's writes", moved.reads)
	}
}

// movingBundle is the API server's view of a Bundle that leaves shard a
// after its first reads (metadata): from then on, it has no shard label.
type movingBundle struct {
	client.Reader
	after, reads int
}

func (m *movingBundle) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := m.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if pm, ok := obj.(*metav1.PartialObjectMetadata); ok && pm.Kind == "Bundle" {
		if m.reads++; m.reads > m.after {
			pm.Labels = nil
		}
	}
	return nil
}

// The same for the Tombstones a pass lists with the API server (the previous
// status names one the cache lacks): one the listing finds outside the shard
// is moved in only if the Bundle is still the shard's after the listing.
func TestTombstonesListedAreMovedInOnlyAfterAskingAgain(t *testing.T) {
	sel, registry := shardA(t)
	b := livingBundle(cmResource(t, "keep", nil))
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	b.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: "shop", Name: "web-sweep-thing-1"}}
	yes := true
	ts := &limbov1alpha1.Tombstone{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-sweep-thing-1", Labels: map[string]string{limbov1alpha1.LabelBundle: "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}}},
		Spec: limbov1alpha1.TombstoneSpec{Plugin: "sweeper", Resource: "sweep", Item: limbov1alpha1.ExternalItem{Kind: "Thing", ID: "1"}},
	}
	for _, tc := range []struct {
		name      string
		after     int // the Bundle reads that still show it in shard a
		wantMoved bool
	}{
		{name: "the Bundle stays", after: 2, wantMoved: true},
		{name: "the Bundle left before the listing", after: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTeardownFixture(t, b.DeepCopy(), registry, ts.DeepCopy())
			f.r.Shard, f.r.Engine.Shard = sel, sel
			f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool { return sel.Matches(o.GetLabels()) })
			f.r.APIReader = &movingBundle{Reader: f.c, after: tc.after}

			p := newPass(f.r, b)
			if !p.stillInShard(context.Background()) { // the apply's check
				t.Fatal("the first read of the Bundle says it left shard a")
			}
			got, err := p.tombstones(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var live limbov1alpha1.Tombstone
			if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(ts), &live); err != nil {
				t.Fatal(err)
			}
			if moved := live.Labels["limbo.dev/shard"] == "a"; moved != tc.wantMoved {
				t.Errorf("the Tombstone moved into shard a: %v, want %v (labels %v)", moved, tc.wantMoved, live.Labels)
			}
			if found := len(got) == 1; found != tc.wantMoved {
				t.Errorf("the pass found %d Tombstones, want the listed one only if the Bundle stays: %v", len(got), tc.wantMoved)
			}
		})
	}
}

// A sharded teardown paces its waves by the watch events of the objects it
// released or deleted (teardownInterval between them otherwise). An object
// the shard's cache does not show (the old shard's label, seed 320151056: a
// resource Blocked since the Bundle moved) sends it none: each such wave cost
// the whole interval, 2 s, past the deadlines of the waves after it. A wave
// whose objects were all found by the API server listing alone, and all
// released or deleted, is followed at once; one with an object of the cache
// waits for its event as before.
func TestShardedTeardownFollowsAWaveOfUnseenObjectsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		appShard string // app's shard label: "" for the old shard's
		want     time.Duration
	}{
		{name: "app of the old shard", want: waveUnseenRequeue},
		{name: "app of this shard", appShard: "a", want: teardownInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, b := movedTeardown(t, tc.appShard)
			res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			if err != nil {
				t.Fatal(err)
			}
			if metav1.GetControllerOf(f.liveConfigMap(t, "app")) != nil {
				t.Fatal("the first wave did not release app")
			}
			if res.RequeueAfter != tc.want {
				t.Errorf("requeue after the first wave: %v, want %v", res.RequeueAfter, tc.want)
			}
		})
	}
}

// movedTeardown is a shard a controller's fixture of a deleted Bundle of shard
// a that declares db and app, which depends on db, both with a delay and
// both existing: db of shard a, app with appShard's label ("" for the shard the
// Bundle came from, which the cache does not show).
func movedTeardown(t *testing.T, appShard string) (*teardownFixture, *limbov1alpha1.Bundle) {
	t.Helper()
	sel, registry := shardA(t)
	delay := map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}
	b := deletedBundle([]limbov1alpha1.Resource{cmResource(t, "db", delay), cmResource(t, "app", delay, "db")}, limbov1alpha1.BundleStatus{})
	b.Labels = map[string]string{"limbo.dev/shard": "a"}
	db := bundleConfigMap("db", delay)
	db.Labels["limbo.dev/shard"] = "a"
	app := bundleConfigMap("app", delay)
	if appShard != "" {
		app.Labels["limbo.dev/shard"] = appShard
	}
	f := newTeardownFixture(t, b, registry, db, app)
	f.r.Shard, f.r.Engine.Shard = sel, sel
	f.r.Client = cacheShowing(f.c.(client.WithWatch), func(o client.Object) bool {
		_, isBundle := o.(*limbov1alpha1.Bundle)
		return isBundle || sel.Matches(o.GetLabels())
	})
	f.r.APIReader = f.c
	return f, b
}

// A Bundle that leaves the controller's cache (deleted, or moved to another
// shard) takes what the controller remembers of it along, on the event: moved
// away and back before a reconcile ran (the work queue merges the two events,
// and the reconcile finds the Bundle there), the status this shard wrote before
// the move stood in for the other shard's, and its onboarding scan — the look
// for what the other shard left in limbo — was skipped.
func TestBundleLeavingTheCacheIsForgotten(t *testing.T) {
	b := livingBundle(cmResource(t, "keep", nil))
	f := newTeardownFixture(t, b, nil)
	r := f.r
	r.onboarded.add(b)
	key := client.ObjectKeyFromObject(b)
	if err := f.c.Get(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
	want := limbov1alpha1.BundleStatus{ObservedGeneration: 7}
	if err := r.statuses.Patch(context.Background(), f.c, b, &b.Status, &want); err != nil {
		t.Fatal(err)
	}
	if !r.bundleLeft().Delete(event.DeleteEvent{Object: b}) {
		t.Error("the delete event was filtered out")
	}
	if r.onboarded.has(b) {
		t.Error("the Bundle is still onboarded after it left the cache")
	}
	back := b.DeepCopy()
	back.ResourceVersion = "999" // another shard wrote since
	got := limbov1alpha1.BundleStatus{ObservedGeneration: 9}
	r.statuses.Known(back, &got)
	if got.ObservedGeneration != 9 {
		t.Errorf("status %+v: the status written before the Bundle left stands in for the API server's (%v)", got, key)
	}
}
