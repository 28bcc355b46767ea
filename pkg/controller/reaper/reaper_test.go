package reaper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/shard"
	"github.com/limbo-dev/limbo/pkg/softdelete"
	"github.com/prometheus/client_golang/prometheus"
)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func inLimbo(name, stamp, delay string, controlled bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		Labels:      map[string]string{limbov1alpha1.LabelBundle: "shop", limbov1alpha1.LabelPendingDeletion: "true"},
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: stamp, limbov1alpha1.AnnotationDeletionDelay: delay},
	}}
	if !controlled { // released by a teardown
		cm.Annotations[limbov1alpha1.AnnotationReleased] = stamp
	}
	if controlled {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "b", Controller: ptr.To(true)}}
	}
	return cm
}

// A pass deletes released objects whose deadline passed, leaves the others, never
// touches objects a Bundle still controls, plugin items (stamped, but never
// labelled with a Bundle), or objects whose Bundle of the same name declares them (it adopts
// them; a spec error stops its pass from adopting them, and never deletes what
// it declares) or has a plugin resource and has not yet run a pass of its spec,
// or has the plugin resource that generated them not Ready (a generator may make
// them again), and returns the time to the next deadline.
// An object whose Bundle is being torn down is the reaper's: a teardown never
// adopts, and one held by a dependency's finalizer must not hold the deadlines
// of what it released. A due object without a controller but without the
// released mark is not the reaper's: only a teardown (or a hand-over) releases,
// and an object a Bundle was counting down when it was deleted with
// --cascade=orphan keeps the label and stamps, its controller gone.
func TestPass(t *testing.T) {
	pluginItem := inLimbo("plugin-item", "2026-11-22T08:00:00Z", "1h", false)
	delete(pluginItem.Labels, limbov1alpha1.LabelBundle)
	notReleased := inLimbo("not-released", "2026-11-22T08:00:00Z", "1h", false)
	delete(notReleased.Annotations, limbov1alpha1.AnnotationReleased)
	tornDown := inLimbo("torn-down", "2026-11-22T08:00:00Z", "1h", false)
	tornDown.Labels[limbov1alpha1.LabelBundle] = "cart"
	// Released by a Bundle "basket" that was deleted and created again: the new one
	// declares it and has not run its first pass yet. "gift"'s new Bundle has,
	// without adopting it. "crate"'s new Bundle has not run a pass, and declares
	// nothing of the name; "mill"'s has not either, and has a plugin resource (a
	// generator may make the object again).
	recreated := inLimbo("recreated", "2026-11-22T08:00:00Z", "1h", false)
	recreated.Labels[limbov1alpha1.LabelBundle] = "basket"
	undeclared1 := inLimbo("not-declared-again", "2026-11-22T08:00:00Z", "1h", false)
	undeclared1.Labels[limbov1alpha1.LabelBundle] = "crate"
	generatorHeld := inLimbo("maybe-generated", "2026-11-22T08:00:00Z", "1h", false)
	generatorHeld.Labels[limbov1alpha1.LabelBundle] = "mill"
	// "forge"'s new Bundle has run a pass of its spec, but its generator "gen"
	// was Blocked on a dependency: what it makes is not known yet, so what "gen"
	// made before stays; an object no plugin made is due. "press"'s generator
	// was Ready in its pass: what it did not make again is due.
	generated := func(name, bundle string) *corev1.ConfigMap {
		cm := inLimbo(name, "2026-11-22T08:00:00Z", "1h", false)
		cm.Labels[limbov1alpha1.LabelBundle] = bundle
		cm.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
		return cm
	}
	blockedGenerator := generated("blocked-generator", "forge")
	notGenerated := generated("not-generated", "press")
	forgeTemplate := inLimbo("forge-template", "2026-11-22T08:00:00Z", "1h", false)
	forgeTemplate.Labels[limbov1alpha1.LabelBundle] = "forge"
	generatorBundle := func(name string, state limbov1alpha1.ResourceState) *limbov1alpha1.Bundle {
		return &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1},
			Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
				{Name: "db", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db"}}`)}},
				{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "configmap"}}}},
			Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{
				{Name: "db", State: limbov1alpha1.ResourceReady}, {Name: "gen", State: state}}}}
	}
	notAdopted := inLimbo("not-adopted", "2026-11-22T08:00:00Z", "1h", false)
	notAdopted.Labels[limbov1alpha1.LabelBundle] = "gift"
	// "tidy" was created again declaring "declared", with an error elsewhere in its
	// spec: its pass processed nothing, adopted nothing, and observed the
	// generation. What it declares stays; what it does not is due.
	declared := inLimbo("declared", "2026-11-22T08:00:00Z", "1h", false)
	declared.Labels[limbov1alpha1.LabelBundle] = "tidy"
	undeclared := inLimbo("undeclared", "2026-11-22T08:00:00Z", "1h", false)
	undeclared.Labels[limbov1alpha1.LabelBundle] = "tidy"
	invalid := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "tidy", Namespace: "ns", Generation: 1},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "kept", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"declared"}}`)}},
			{Name: "broken", References: []limbov1alpha1.Reference{{Resource: "missing"}}, Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"undeclared"}}`)}},
		}},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: limbov1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: limbov1alpha1.ReasonInvalidSpec}}}}
	// Released by a Bundle that is gone: "adopter" declares "wanted" to adopt it
	// (its pass cancels the countdown once its adopting apply succeeds, which a
	// dependency that is not Ready holds back), and names "named-only" without
	// adopting it (its pass will refuse it: NotOwned).
	wanted := inLimbo("wanted", "2026-11-22T08:00:00Z", "1h", false)
	wanted.Labels[limbov1alpha1.LabelBundle] = "departed"
	namedOnly := inLimbo("named-only", "2026-11-22T08:00:00Z", "1h", false)
	namedOnly.Labels[limbov1alpha1.LabelBundle] = "departed"
	adopter := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "adopter", Namespace: "ns", Generation: 1},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "w", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wanted","annotations":{"limbo.dev/adopt":"true"}}}`)}},
			{Name: "n", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"named-only"}}`)}},
		}},
		Status: limbov1alpha1.BundleStatus{ObservedGeneration: 1}}
	objects := []client.Object{
		wanted, namedOnly, adopter,
		inLimbo("due", "2026-11-22T09:00:00Z", "1h", false),      // deadline == now
		inLimbo("waiting", "2026-11-22T09:59:50Z", "30s", false), // deadline in 20s
		inLimbo("controlled", "2026-11-22T08:00:00Z", "1h", true),
		pluginItem, notReleased, tornDown, recreated, notAdopted, declared, undeclared, invalid, undeclared1, generatorHeld,
		blockedGenerator, notGenerated, forgeTemplate, generatorBundle("forge", limbov1alpha1.ResourceBlocked), generatorBundle("press", limbov1alpha1.ResourceReady),
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "basket", Namespace: "ns", Generation: 1},
			Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
				{Name: "r", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"recreated"}}`)}}}}},
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "crate", Namespace: "ns", Generation: 1},
			Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
				{Name: "r", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`)}}}}},
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "mill", Namespace: "ns", Generation: 1},
			Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "gen", Plugin: &limbov1alpha1.PluginResource{Name: "configmap"}}}}},
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "gift", Namespace: "ns", Generation: 2},
			Status: limbov1alpha1.BundleStatus{ObservedGeneration: 2}},
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "ns", Finalizers: []string{limbov1alpha1.FinalizerTeardown},
			DeletionTimestamp: &metav1.Time{Time: now}}},
	}
	r, c := newReaper(t, objects...)
	var watched []schema.GroupVersionKind
	r.OnKind = func(gvk schema.GroupVersionKind) error { watched = append(watched, gvk); return nil }

	wait, err := r.pass(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if wait != holdRecheck {
		t.Errorf("wait = %v, want holdRecheck (the re-check of the objects whose Bundle decides)", wait)
	}
	exists := func(name string) bool {
		return c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{}) == nil
	}
	for name, want := range map[string]bool{"due": false, "waiting": true, "controlled": true, "plugin-item": true, "not-released": true, "torn-down": false,
		"recreated": true, "not-adopted": false, "declared": true, "undeclared": false, "not-declared-again": false, "maybe-generated": true,
		"wanted": true, "named-only": false, "blocked-generator": true, "not-generated": false, "forge-template": false} {
		if exists(name) != want {
			t.Errorf("%s exists = %v, want %v", name, !want, want)
		}
	}
	if fmt.Sprint(watched) != "[/v1, Kind=ConfigMap]" {
		t.Errorf("kinds handed to OnKind = %v, want only ConfigMap (bindings cannot be listed)", watched)
	}
	kinds, _ := r.kindsToScan(false)
	if len(kinds) != 1 {
		t.Errorf("known kinds after a full scan = %v, want [ConfigMap]", kinds)
	}
}

// A reaper of one shard deletes only the objects in limbo of that shard.
func TestPassOfOneShard(t *testing.T) {
	mine := inLimbo("mine", "2026-11-22T09:00:00Z", "1h", false)
	other := inLimbo("other", "2026-11-22T09:00:00Z", "1h", false)
	other.Labels["limbo.dev/shard"] = "a"
	r, c := newReaper(t, mine, other)
	var err error
	if r.Shard, err = shard.Parse("!limbo.dev/shard"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"mine": false, "other": true} {
		exists := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{}) == nil
		if exists != want {
			t.Errorf("%s exists = %v, want %v", name, exists, want)
		}
	}
}

// A reaper of some namespaces (--namespaces) lists and deletes only the
// objects in limbo there: installs that split a cluster's namespaces each reap
// their own, and one may not be granted the others'.
func TestPassOfSomeNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		wantListed []string // the namespaces of the reaper's LISTs of ConfigMaps; "" is every namespace
		wantKeptB  bool
	}{
		{name: "every namespace", wantListed: []string{""}, wantKeptB: false},
		{name: "namespace a only", namespaces: []string{"a"}, wantListed: []string{"a"}, wantKeptB: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inA := inLimbo("due", "2026-11-22T09:00:00Z", "1h", false)
			inA.Namespace = "a"
			inB := inLimbo("due", "2026-11-22T09:00:00Z", "1h", false)
			inB.Namespace, inB.UID = "b", "uid-due-b"
			var listed []string
			r, c := newReaperIntercepted(t, interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
					listed = append(listed, (&client.ListOptions{}).ApplyOptions(opts).Namespace)
				}
				return cl.List(ctx, list, opts...)
			}}, inA, inB)
			r.Namespaces = tc.namespaces
			if _, err := r.pass(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(listed) != fmt.Sprint(tc.wantListed) {
				t.Errorf("ConfigMaps listed in namespaces %q, want %q", listed, tc.wantListed)
			}
			for ns, wantKept := range map[string]bool{"a": false, "b": tc.wantKeptB} {
				if kept := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "due"}, &corev1.ConfigMap{}) == nil; kept != wantKept {
					t.Errorf("the due object in namespace %s kept = %v, want %v", ns, kept, wantKept)
				}
			}
		})
	}
}

// A released object that a Bundle of another shard declares to adopt is held
// at its deadline: this shard's cache does not hold that Bundle, so the reaper
// reads the namespace's Bundles from the API server — only for objects that
// are due.
func TestHeldForAnAdopterOfAnotherShard(t *testing.T) {
	wanted := inLimbo("wanted", "2026-11-22T08:00:00Z", "1h", false) // due
	wanted.Labels["limbo.dev/shard"] = "a"
	wanted.Labels[limbov1alpha1.LabelBundle] = "departed"
	waiting := inLimbo("waiting", "2026-11-22T09:59:00Z", "1h", false) // due in 59 min
	waiting.Labels["limbo.dev/shard"] = "a"
	waiting.Labels[limbov1alpha1.LabelBundle] = "departed"
	adopter := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "adopter", Namespace: "ns", Generation: 1, Labels: map[string]string{"limbo.dev/shard": "b"}},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "w", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wanted","annotations":{"limbo.dev/adopt":"true"}}}`)}},
		}}}
	r, c := newReaper(t, wanted, waiting, adopter)
	var err error
	if r.Shard, err = shard.Parse("limbo.dev/shard=a"); err != nil {
		t.Fatal(err)
	}
	bundleLists := 0
	// The shard's cache: no Bundle of shard b.
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*limbov1alpha1.BundleList); ok {
			return nil
		}
		return cl.List(ctx, list, opts...)
	}})
	r.Reader = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*limbov1alpha1.BundleList); ok {
			bundleLists++
		}
		return cl.List(ctx, list, opts...)
	}})

	wait, err := r.pass(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "wanted"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the object another shard's Bundle adopts: %v, want it kept", err)
	}
	if wait != declaredRecheck {
		t.Errorf("wait = %v, want declaredRecheck", wait)
	}
	if bundleLists != 1 {
		t.Errorf("Bundle LISTs from the API server = %d, want 1 (for the due object only)", bundleLists)
	}
}

// A full scan that could not list every kind is incomplete, and runs again
// soon; a failed write of one object does not make the scan incomplete: the
// next full scan runs after the interval (the object is retried by the pass's
// own wait).
func TestIncompleteScan(t *testing.T) {
	failing := errors.New("the API server is not answering")
	cases := []struct {
		name           string
		discoveryFails bool
		funcs          interceptor.Funcs
		wantErr        bool
		wantIncomplete bool
	}{
		{name: "complete", wantErr: false},
		{name: "discovery fails", discoveryFails: true, wantErr: true, wantIncomplete: true},
		{name: "a kind's LIST fails", funcs: interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return failing
		}}, wantErr: true, wantIncomplete: true},
		{name: "a kind the controller may not list is skipped", funcs: interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC: not granted"))
		}}, wantErr: false},
		{name: "a delete fails", funcs: interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return failing
		}}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newReaperIntercepted(t, tc.funcs, inLimbo("due", "2026-11-22T09:00:00Z", "1h", false))
			if tc.discoveryFails {
				r.Discovery = failingDiscovery{failing}
			}
			_, err := r.pass(context.Background(), true)
			if (err != nil) != tc.wantErr || errors.Is(err, errScanIncomplete) != tc.wantIncomplete {
				t.Fatalf("error %v; want an error %v, incomplete %v", err, tc.wantErr, tc.wantIncomplete)
			}
			wantAfter := r.FullScanInterval
			if tc.wantIncomplete {
				wantAfter = firstFullScanRetry
			}
			if after, _ := r.afterFullScan(err, 0); after != wantAfter {
				t.Errorf("next full scan in %v, want %v", after, wantAfter)
			}
		})
	}
}

func TestNextFullScan(t *testing.T) {
	never := time.Duration(1<<63 - 1)
	cases := []struct {
		name       string
		interval   time.Duration
		incomplete bool
		retry      time.Duration
		wantAfter  time.Duration
		wantRetry  time.Duration
	}{
		{"complete: the interval", 30 * time.Minute, false, 0, 30 * time.Minute, 0},
		{"complete after failures: the interval, backoff reset", 30 * time.Minute, false, 2 * time.Minute, 30 * time.Minute, 0},
		{"first failure", 30 * time.Minute, true, 0, firstFullScanRetry, firstFullScanRetry},
		{"failures in a row double", 30 * time.Minute, true, 40 * time.Second, 80 * time.Second, 80 * time.Second},
		{"up to the most", 30 * time.Minute, true, 4 * time.Minute, maxFullScanRetry, maxFullScanRetry},
		{"never beyond the interval", time.Minute, true, 40 * time.Second, time.Minute, time.Minute},
		{"periodic scans off: none after a complete scan", 0, false, 0, never, 0},
		{"periodic scans off: an incomplete scan is still retried", 0, true, 0, firstFullScanRetry, firstFullScanRetry},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reaper{FullScanInterval: tc.interval}
			after, retry := r.nextFullScan(tc.incomplete, tc.retry)
			if after != tc.wantAfter || retry != tc.wantRetry {
				t.Errorf("nextFullScan = %v, %v; want %v, %v", after, retry, tc.wantAfter, tc.wantRetry)
			}
		})
	}
}

// limbo_pending_deletions counts what the reaper holds across passes: a pass that
// lists only the kinds known to hold something still updates it, down to 0.
func TestPendingGauge(t *testing.T) {
	r, _ := newReaper(t, inLimbo("soon", "2026-11-22T09:59:50Z", "30s", false))
	reg := prometheus.NewRegistry()
	r.Engine.Metrics = softdelete.NewMetrics(reg)
	clock := clocktesting.NewFakePassiveClock(now)
	r.Clock, r.Engine.Clock = clock, clock
	pending := func() float64 { return pendingGauge(t, reg) }
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != 1 {
		t.Fatalf("pending after the full scan = %v, want 1", got)
	}
	clock.SetTime(now.Add(30 * time.Second)) // "soon" is due
	if _, err := r.pass(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != 0 {
		t.Errorf("pending after the pass that deleted the last = %v, want 0", got)
	}
}

// A kind whose CRD went (its objects with it) is forgotten: no pass fails on it
// again, and its count leaves limbo_pending_deletions. Before, every pass failed
// ("no matches for kind"), logged an error every 5 s, and the gauge kept the
// kind's last count for good. A 404 while discovery still serves the kind is the
// API server's passing answer (after an etcd restart, a CRD just added): the
// kind is kept, and the pass, incomplete, retried.
func TestKindGone(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, SearchedVersions: []string{"v1"}}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
	for _, tc := range []struct {
		name       string
		err        error
		discovered bool // discovery still lists ConfigMaps
		otherDown  bool // discovery fails for another API group
		ownDown    bool // discovery fails for ConfigMaps' API group
		discoDown  bool // discovery fails
		wantGone   bool
	}{
		{"no REST mapping", noMatch, false, false, false, false, true},
		{"404, and discovery no longer serves it", notFound, false, false, false, false, true},
		{"404, and discovery no longer serves it while another group is unavailable", notFound, false, true, false, false, true},
		{"404, but discovery still serves it: kept", notFound, true, false, false, false, false},
		{"404, but discovery still serves it while another group is unavailable: kept", notFound, true, true, false, false, false},
		// Discovery that cannot tell does not make a 404 the kind's end.
		{"404, and discovery of its own group fails: kept", notFound, false, false, true, false, false},
		{"404, and discovery fails: kept", notFound, false, false, false, true, false},
		// Only a 404 says the kind may be gone: another failure is the pass's.
		{"500, and discovery no longer serves it: kept", apierrors.NewInternalError(errors.New("etcd timeout")), false, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone := false
			r, _ := newReaperIntercepted(t, interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if gone {
					return tc.err
				}
				return cl.List(ctx, list, opts...)
			}}, inLimbo("later", "2026-11-22T09:59:50Z", "1h", false))
			reg := prometheus.NewRegistry()
			r.Engine.Metrics = softdelete.NewMetrics(reg)
			if _, err := r.pass(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			if got := pendingGauge(t, reg); got != 1 {
				t.Fatalf("pending after the full scan = %v, want 1", got)
			}
			gone = true
			served := r.Discovery.(fakeDiscovery)
			if !tc.discovered {
				served = fakeDiscovery{}
			}
			r.Discovery = served
			if tc.otherDown {
				r.Discovery = partialDiscovery{lists: served, down: metricsDown}
			}
			if tc.ownDown {
				r.Discovery = partialDiscovery{lists: served, down: corev1.SchemeGroupVersion}
			}
			if tc.discoDown {
				r.Discovery = failingDiscovery{errors.New("the API server is not answering")}
			}
			for range 2 {
				if _, err := r.pass(context.Background(), false); (err == nil) != tc.wantGone || (err != nil && !errors.Is(err, errScanIncomplete)) {
					t.Errorf("pass after the LIST failed: %v; want an incomplete scan %v", err, !tc.wantGone)
				}
			}
			wantPending, wantKinds := 1.0, 1
			if tc.wantGone {
				wantPending, wantKinds = 0, 0
			}
			if got := pendingGauge(t, reg); got != wantPending {
				t.Errorf("pending = %v, want %v", got, wantPending)
			}
			if kinds, _ := r.kindsToScan(false); len(kinds) != wantKinds {
				t.Errorf("kinds listed between full scans = %v, want %d", kinds, wantKinds)
			}
		})
	}
}

// pendingGauge reads limbo_pending_deletions from reg.
func pendingGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "limbo_pending_deletions" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no limbo_pending_deletions")
	return 0
}

// newReaper is a reaper of objects on a fake client that serves ConfigMaps (and
// kinds it cannot list), at now.
func newReaper(t testing.TB, objects ...client.Object) (*Reaper, client.Client) {
	t.Helper()
	return newReaperIntercepted(t, interceptor.Funcs{}, objects...)
}

// newReaperIntercepted is newReaper with funcs intercepting the client's calls.
func newReaperIntercepted(t testing.TB, funcs interceptor.Funcs, objects ...client.Object) (*Reaper, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := limbov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithInterceptorFuncs(funcs).Build()
	disco := fakeDiscovery{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: metav1.Verbs{"list", "delete", "patch", "watch"}},
			{Name: "configmaps/status", Kind: "ConfigMap", Namespaced: true, Verbs: metav1.Verbs{"get"}},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		},
	}}
	engine := &softdelete.Engine{Client: c, Reader: c, Recorder: record.NewFakeRecorder(10), Clock: clocktesting.NewFakePassiveClock(now), Metrics: softdelete.NewMetrics(prometheus.NewRegistry())}
	r := New(c, c, disco, engine, time.Hour)
	r.Clock = engine.Clock
	return r, c
}

type fakeDiscovery []*metav1.APIResourceList

func (f fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return f, nil
}

// partialDiscovery names the kinds of lists and fails for the API groups of
// down: an aggregated API whose service is unavailable.
type partialDiscovery struct {
	lists fakeDiscovery
	down  schema.GroupVersion
}

func (f partialDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return f.lists, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{f.down: errors.New("the server is currently unable to handle the request")}}
}

// metricsDown is the API group of a stale metrics-server APIService.
var metricsDown = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}

// An API group discovery cannot read (an aggregated API whose service is
// down) does not fail the full scan: the other kinds are reaped, the pass has
// no error (before, it logged one at every full scan for as long as the
// service stayed down), and the full scan is retried soon, as an incomplete
// one, for the objects of that group once it is back; a discovery that reads
// every group again lets the full scans return to their interval.
func TestUnavailableAPIGroup(t *testing.T) {
	r, c := newReaper(t, inLimbo("due", "2026-11-22T08:00:00Z", "1h", false))
	served := r.Discovery.(fakeDiscovery)
	r.Discovery = partialDiscovery{lists: served, down: metricsDown}
	_, err := r.pass(context.Background(), true)
	if err != nil {
		t.Fatalf("full pass with an API group unavailable: %v, want no error", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "due"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("due object of a served kind: Get = %v, want it deleted", err)
	}
	if !r.unavailable.Any() {
		t.Error("the unavailable group was not recorded")
	}
	if after, _ := r.afterFullScan(err, 0); after != firstFullScanRetry {
		t.Errorf("next full scan in %v, want the incomplete scan's retry %v", after, firstFullScanRetry)
	}
	r.Discovery = served
	if _, err = r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if after, _ := r.afterFullScan(err, firstFullScanRetry); after != r.FullScanInterval {
		t.Errorf("next full scan in %v after a discovery that read every group, want the interval %v", after, r.FullScanInterval)
	}
}

type failingDiscovery struct{ err error }

func (f failingDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return nil, f.err
}

// The hold and the decision are taken at one instant: an object whose deadline
// falls between two readings of the clock (here: the reaper's clock 1 ms before
// it, the engine's at it) is not found due without the adopter check, made only
// for due objects, and deleted although a Bundle declares it to adopt it.
func TestHoldAndDeleteDecidedAtTheSameInstant(t *testing.T) {
	wanted := inLimbo("wanted", "2026-11-22T09:00:00Z", "1h", false) // deadline == now
	wanted.Labels[limbov1alpha1.LabelBundle] = "departed"
	adopter := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "adopter", Namespace: "ns", Generation: 1},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
			{Name: "w", Object: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wanted","annotations":{"limbo.dev/adopt":"true"}}}`)}},
		}}}
	r, c := newReaper(t, wanted, adopter)
	r.Clock = clocktesting.NewFakePassiveClock(now.Add(-time.Millisecond))
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "wanted"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("wanted: %v; want it kept for its adopter", err)
	}
}

// A pass wakes at the soonest deadline it decided about, however long the rest
// of the pass took: a scan that spends 5 s listing the kinds after ConfigMaps
// does not wake 5 s late for a ConfigMap due 10 s after it was decided.
func TestWaitCountsFromTheDecision(t *testing.T) {
	waiting := inLimbo("waiting", "2026-11-22T09:00:10Z", "1h", false) // due at now+10s
	clk := clocktesting.NewFakeClock(now)
	r, _ := newReaperIntercepted(t, interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if m, ok := list.(*metav1.PartialObjectMetadataList); ok && m.GetObjectKind().GroupVersionKind().Kind == "SecretList" {
			clk.Step(5 * time.Second) // a slow LIST (or many kinds) after ConfigMaps
		}
		return cl.List(ctx, list, opts...)
	}}, waiting)
	r.Clock, r.Engine.Clock = clk, clk
	r.Discovery = fakeDiscovery{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: metav1.Verbs{"list", "delete", "patch", "watch"}},
		{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: metav1.Verbs{"list", "delete", "patch", "watch"}},
	}}}
	wait, err := r.pass(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if due := now.Add(10 * time.Second); clk.Now().Add(wait).After(due) {
		t.Errorf("the pass ends at %v and sleeps %v: wakes at %v, after the deadline %v", clk.Now(), wait, clk.Now().Add(wait), due)
	}
}

// After a pass, the reaper sleeps until the soonest of its wait, the next full
// scan and, after a failure, failedPassRetry: a pass between full scans whose
// LIST failed returns no wait at all (it decided nothing), and would otherwise
// leave that kind's due objects until the next full scan, an hour later.
func TestSleepAfterPass(t *testing.T) {
	never := time.Duration(1<<63 - 1)
	failed := fmt.Errorf("%w: %w", errScanIncomplete, errors.New("the API server is not answering"))
	for _, tc := range []struct {
		name      string
		wait      time.Duration
		err       error
		untilFull time.Duration
		want      time.Duration
	}{
		{"a deadline", 20 * time.Second, nil, time.Hour, 20 * time.Second},
		{"nothing in limbo: the next full scan", never, nil, time.Hour, time.Hour},
		{"a failed LIST", never, failed, time.Hour, failedPassRetry},
		{"a failed pass with a deadline sooner", time.Second, failed, time.Hour, time.Second},
		{"the full scan sooner", 20 * time.Second, failed, 2 * time.Second, 2 * time.Second},
		{"a deadline passed: at least a millisecond", 0, nil, time.Hour, time.Millisecond},
		{"the full scan late: at least a millisecond", time.Minute, nil, -time.Second, time.Millisecond},
		{"an object's refused delete: its own retry", time.Minute, errors.Join(objectFailure{errors.New("refused")}), time.Hour, time.Minute},
		{"an object's refused delete and a failed LIST", time.Minute, errors.Join(objectFailure{errors.New("refused")}, failed), time.Hour, failedPassRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sleepAfterPass(tc.wait, tc.err, tc.untilFull); got != tc.want {
				t.Errorf("sleepAfterPass(%v, %v, %v) = %v, want %v", tc.wait, tc.err, tc.untilFull, got, tc.want)
			}
		})
	}
}

// A released object is observed with the version its Bundle's template named;
// when that version is not (or no longer) the one discovery serves — a CRD
// that stopped serving v1 for v2, or a transient 404 of a version that is not
// the preferred one — the kind goes on being listed at the version served,
// and the object is reaped on time. Before, the kind was forgotten until the
// next full scan (never, with --resync-period=0): the object stayed past its
// deadline.
func TestKindServedAtAnotherVersion(t *testing.T) {
	old := schema.GroupVersionKind{Version: "v0", Kind: "ConfigMap"} // the template's; discovery serves v1
	due := inLimbo("due", "2026-11-22T09:00:00Z", "1m", false)
	r, c := newReaperIntercepted(t, interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if list.GetObjectKind().GroupVersionKind().Version == old.Version {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
		}
		return cl.List(ctx, list, opts...)
	}}, due)
	observed := &metav1.PartialObjectMetadata{ObjectMeta: *due.ObjectMeta.DeepCopy()}
	observed.SetGroupVersionKind(old)
	r.Observe(observed)
	if _, err := r.pass(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(due), &cm); !apierrors.IsNotFound(err) {
		t.Errorf("the due object is still there (%v): its kind was forgotten", err)
	}
	kinds, _ := r.kindsToScan(false)
	if want := []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}; !slices.Equal(kinds, want) {
		t.Errorf("kinds listed between full scans = %v, want %v", kinds, want)
	}
}

// A delete the API server refuses (a webhook, a policy: Forbidden) is retried
// as long after as it has been refused, from 5 s up to a minute: at 5 s for
// good, each retry listed every known kind again and sent the refused DELETE
// with a DeleteFailed event. A delete that goes through ends the backoff.
func TestRefusedDeleteBacksOff(t *testing.T) {
	refuse := &atomic.Bool{}
	refuse.Store(true)
	r, c := newReaperIntercepted(t, interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if refuse.Load() {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("a policy protects it"))
		}
		return c.Delete(ctx, obj, opts...)
	}}, inLimbo("due", "2026-11-22T08:00:00Z", "1h", false))
	clk := r.Clock.(*clocktesting.FakePassiveClock)
	start := clk.Now()
	for _, step := range []struct {
		at   time.Duration // since the first refusal
		want time.Duration // the pass's wait
	}{{0, 5 * time.Second}, {5 * time.Second, 5 * time.Second}, {10 * time.Second, 10 * time.Second}, {30 * time.Second, 30 * time.Second}, {5 * time.Minute, time.Minute}} {
		clk.SetTime(start.Add(step.at))
		after, err := r.pass(context.Background(), true)
		if err == nil {
			t.Fatalf("at +%v: the refused delete is no error", step.at)
		}
		if after != step.want {
			t.Errorf("at +%v: next pass in %v, want %v", step.at, after, step.want)
		}
		// Start sleeps that long: a refused delete is no failed pass, which
		// would cap its sleep at failedPassRetry.
		if slept := sleepAfterPass(after, err, time.Hour); slept != step.want {
			t.Errorf("at +%v: Start sleeps %v after the pass, want %v", step.at, slept, step.want)
		}
	}
	refuse.Store(false)
	if _, err := r.pass(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "due"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("due object once the delete is allowed: Get = %v, want it deleted", err)
	}
	if len(r.refusedSince) != 0 {
		t.Errorf("backoffs kept after the delete went through: %v", r.refusedSince)
	}
}
