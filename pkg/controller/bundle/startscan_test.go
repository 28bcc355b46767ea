package bundle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/shard"
)

// scanDiscovery serves the kinds of a cluster: ConfigMaps, PodTemplates,
// Deployments, Tombstones, a kind that cannot be watched, a subresource; err
// is its error (a group whose discovery failed); drop, a kind it leaves out.
type scanDiscovery struct {
	err  error
	drop string
}

func (d scanDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	all := metav1.Verbs{"list", "watch", "delete", "patch"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
			{Name: "podtemplates", Kind: "PodTemplate", Namespaced: true, Verbs: all},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
		}},
		{GroupVersion: "limbo.dev/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "tombstones", Kind: "Tombstone", Namespaced: true, Verbs: all},
		}},
	}
	for _, l := range lists {
		l.APIResources = slices.DeleteFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Kind == d.drop })
	}
	return lists, d.err
}

// scanReader answers the scan's LISTs: an object in namespace holds[kind], if
// any; failing[kind] fails the LIST. It records each LIST; the scan reads kinds
// concurrently, so their order is not defined (see sortedLists).
type scanReader struct {
	client.Reader
	holds   map[string]string
	failing map[string]error
	mu      sync.Mutex
	lists   []string
}

// sortedLists are the LISTs recorded, sorted.
func (r *scanReader) sortedLists() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.lists))
}

func (r *scanReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	kind := strings.TrimSuffix(list.GetObjectKind().GroupVersionKind().Kind, "List")
	r.mu.Lock()
	r.lists = append(r.lists, fmt.Sprintf("%s ns=%q %s limit=%d", kind, o.Namespace, o.LabelSelector, o.Limit))
	r.mu.Unlock()
	if err := r.failing[kind]; err != nil {
		return err
	}
	if ns, ok := r.holds[kind]; ok && (o.Namespace == "" || o.Namespace == ns) {
		list.(*metav1.PartialObjectMetadataList).Items = []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}}
	}
	return nil
}

// The start scan reads every namespaced kind that can be watched (Tombstones
// excepted: the engine's records) with one LIST of at most one object of the
// controller's Bundles, in each of its namespaces; it watches the kinds that
// hold one; it retries only what it could not read, and lets teardowns go once
// every kind has been tried.
func TestStartScan(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no"))
	unavailable := apierrors.NewServiceUnavailable("etcd is not answering")
	// everyKind are the LISTs of a scan of every namespace.
	everyKind := []string{
		`ConfigMap ns="" ` + notEndpointCopies + `limbo.dev/bundle limit=1`,
		`PodTemplate ns="" ` + notEndpointCopies + `limbo.dev/bundle limit=1`,
		`Deployment ns="" ` + notEndpointCopies + `limbo.dev/bundle limit=1`,
	}
	sharded, err := shard.Parse("limbo.dev/shard=a")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		shard      *shard.Selector
		discovery  error
		holds      map[string]string
		failing    map[string]error
		watchFails bool
		wantLists  []string
		wantWatch  string
		wantErr    string
		wantDone   bool
		// wantForbidden is how many kinds the controller may not list and
		// API groups discovery could not read.
		wantForbidden int
		// wantUnavailable: API groups are recorded unavailable (tried again
		// later, without an error).
		wantUnavailable bool
		// wantRetry are the LISTs of the scan after (nothing failing then).
		wantRetry []string
	}{{
		name:      "every namespace",
		holds:     map[string]string{"PodTemplate": "shop"},
		wantLists: everyKind,
		wantWatch: "[/v1, Kind=PodTemplate]",
		wantDone:  true,
	}, {
		name:       "the controller's namespaces, in its shard; a kind found in the first is not listed in the second",
		namespaces: []string{"a", "b"},
		shard:      sharded,
		holds:      map[string]string{"ConfigMap": "a", "Deployment": "b"},
		wantLists: []string{
			`ConfigMap ns="a" ` + notEndpointCopies + `limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`PodTemplate ns="a" ` + notEndpointCopies + `limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`PodTemplate ns="b" ` + notEndpointCopies + `limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`Deployment ns="a" ` + notEndpointCopies + `limbo.dev/bundle,limbo.dev/shard=a limit=1`,
			`Deployment ns="b" ` + notEndpointCopies + `limbo.dev/bundle,limbo.dev/shard=a limit=1`,
		},
		wantWatch: "[/v1, Kind=ConfigMap apps/v1, Kind=Deployment]",
		wantDone:  true,
	}, {
		name:      "a kind that cannot be read is retried alone; teardowns go ahead",
		holds:     map[string]string{"Deployment": "shop"},
		failing:   map[string]error{"Deployment": unavailable},
		wantLists: everyKind,
		wantWatch: "[]",
		wantErr:   "apps/v1, Resource=deployments: etcd is not answering",
		wantDone:  true,
		wantRetry: []string{`Deployment ns="" ` + notEndpointCopies + `limbo.dev/bundle limit=1`},
	}, {
		name:          "a kind the controller may not list is skipped without an error, and tried again",
		holds:         map[string]string{"Deployment": "shop"},
		failing:       map[string]error{"Deployment": forbidden},
		wantLists:     everyKind,
		wantWatch:     "[]",
		wantDone:      true,
		wantForbidden: 1,
		wantRetry:     []string{`Deployment ns="" ` + notEndpointCopies + `limbo.dev/bundle limit=1`},
	}, {
		name:       "a kind whose watch does not sync is retried",
		holds:      map[string]string{"ConfigMap": "shop"},
		watchFails: true,
		wantLists:  everyKind,
		wantWatch:  "[/v1, Kind=ConfigMap]",
		wantErr:    "/v1, Resource=configmaps: not synced",
		wantDone:   true,
		wantRetry:  []string{`ConfigMap ns="" ` + notEndpointCopies + `limbo.dev/bundle limit=1`},
	}, {
		// An aggregated API whose service is down (a stale metrics-server
		// APIService) is not an error: before, the scan logged one every
		// minute for as long as it stayed down. Its groups are tried again as
		// the forbidden kinds are.
		name:            "discovery failed for some groups: the others are read, without an error",
		discovery:       &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("unavailable")}},
		wantLists:       everyKind,
		wantWatch:       "[]",
		wantDone:        true,
		wantUnavailable: true,
		wantForbidden:   1, // the group, tried again later
		wantRetry:       []string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			reader := &scanReader{holds: tc.holds, failing: tc.failing}
			var watchedMu sync.Mutex
			var watched []schema.GroupVersionKind
			s := &startScan{discovery: scanDiscovery{err: tc.discovery}, reader: reader, namespaces: tc.namespaces,
				selector: tc.shard.And(ManagedSelector()),
				watch: func(_ context.Context, gvk schema.GroupVersionKind) error {
					watchedMu.Lock()
					watched = append(watched, gvk)
					watchedMu.Unlock()
					if tc.watchFails {
						return errors.New("not synced")
					}
					return nil
				}}
			read := map[schema.GroupVersionKind]bool{}
			refused, err := s.scan(context.Background(), read)
			if got := s.unavailable.Any(); got != tc.wantUnavailable {
				t.Errorf("API groups recorded unavailable: %v, want %v", got, tc.wantUnavailable)
			}
			if refused != tc.wantForbidden {
				t.Errorf("kinds refused = %d, want %d", refused, tc.wantForbidden)
			}
			if got := fmt.Sprint(err); (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(got, tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if got, want := reader.sortedLists(), slices.Sorted(slices.Values(tc.wantLists)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("LISTs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			slices.SortFunc(watched, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
			if fmt.Sprint(watched) != tc.wantWatch {
				t.Errorf("watched %v, want %s", watched, tc.wantWatch)
			}
			if s.scanned() != tc.wantDone {
				t.Errorf("scanned() = %v, want %v", s.scanned(), tc.wantDone)
			}
			if err == nil && refused == 0 {
				return
			}
			reader.lists, reader.failing, tc.watchFails = nil, nil, false
			s.discovery = scanDiscovery{}
			if refused, err := s.scan(context.Background(), read); err != nil || refused != 0 {
				t.Errorf("the retry: %d kinds refused, error %v", refused, err)
			}
			if got := reader.sortedLists(); fmt.Sprint(got) != fmt.Sprint(tc.wantRetry) {
				t.Errorf("LISTs of the retry: %v, want %v", got, tc.wantRetry)
			}
		})
	}
}

// Until the scan has tried every kind, teardowns wait; a controller without a
// scan has nothing to wait for.
func TestStartScanHoldsTeardownsUntilTried(t *testing.T) {
	var none *startScan
	if !none.scanned() {
		t.Error("no scan: scanned() = false")
	}
	s := &startScan{discovery: failingDiscovery{}, reader: &scanReader{}}
	if _, err := s.scan(context.Background(), map[schema.GroupVersionKind]bool{}); err == nil {
		t.Fatal("a scan without discovery succeeded")
	}
	if s.scanned() {
		t.Error("scanned() after a scan that discovered nothing")
	}
}

type failingDiscovery struct{}

func (failingDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return nil, errors.New("the API server is down")
}

// A teardown lets its Bundle go once the scan has tried every kind, and once
// its objects as the API server lists them (which the cache may not show yet)
// leave nothing to do; then it tells the reaper (OnHoldEnded), which leaves the
// released objects alone while their Bundle is there.
func TestLetGo(t *testing.T) {
	configMapGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, tc := range []struct {
		name        string
		scanned     bool
		settleActs  bool
		wantSettled []string // the objects settle was given
		wantRequeue time.Duration
		wantLetGo   bool
	}{
		{name: "the scan has not tried every kind", wantRequeue: startScanWait},
		{name: "the API server shows an object to act on", scanned: true, settleActs: true, wantSettled: []string{"ConfigMap/web-cm"}, wantRequeue: teardownInterval},
		{name: "nothing left to do", scanned: true, wantSettled: []string{"ConfigMap/web-cm"}, wantLetGo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := limbov1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "b-uid", Finalizers: []string{limbov1alpha1.FinalizerTeardown}}}
			// Only the API server has it: the cache has not seen it yet.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-cm", Labels: map[string]string{limbov1alpha1.LabelBundle: "web"}}}
			other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "other", Labels: map[string]string{limbov1alpha1.LabelBundle: "other"}}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(b, cm, other).Build()
			told := 0
			r := &Reconciler{Client: c, APIReader: c, Mapper: c.RESTMapper(), OnHoldEnded: func() { told++ }, Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
			var settled []string
			list := func() ([]*unstructured.Unstructured, error) {
				return r.labelledFresh(context.Background(), b, []schema.GroupVersionKind{configMapGVK})
			}
			res, err := r.letGo(context.Background(), b.DeepCopy(), tc.scanned, list, func(fresh []*unstructured.Unstructured) (ctrl.Result, bool, error) {
				for _, o := range fresh {
					settled = append(settled, o.GetKind()+"/"+o.GetName())
				}
				if tc.settleActs {
					return ctrl.Result{RequeueAfter: teardownInterval}, true, nil
				}
				return ctrl.Result{}, false, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var got limbov1alpha1.Bundle
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), &got); err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tc.wantRequeue)
			}
			if !slices.Equal(settled, tc.wantSettled) {
				t.Errorf("settle was given %v, want %v", settled, tc.wantSettled)
			}
			if letGo := len(got.Finalizers) == 0; letGo != tc.wantLetGo {
				t.Errorf("finalizers %v: let go %v, want %v", got.Finalizers, letGo, tc.wantLetGo)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantLetGo]; told != want {
				t.Errorf("the reaper was told %d times, want %d", told, want)
			}
		})
	}
}

// A teardown lets its Bundle go only if the start scan was done before the
// pass listed the Bundle's objects: a scan that ends during the pass may have
// just watched a kind holding one of them (named only by a status write that
// failed), which the pass's listing did not cover and letGo's does not
// either (the kinds the spec and status name). Before, the Bundle went, and
// the garbage collector deleted that object at once, its delay ignored.
func TestTeardownLetsGoOnlyOnAListingAfterTheScan(t *testing.T) {
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1}
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "cm")}, status) // cm is gone already
	f := newTeardownFixture(t, b, nil)
	f.r.startScan = &startScan{}
	// The scan ends as the pass lists the Bundle's objects (not its
	// Tombstones, listed before).
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, tombstones := list.(*limbov1alpha1.TombstoneList); !tombstones {
			f.r.startScan.done.Store(true)
		}
		return c.List(ctx, list, opts...)
	}})
	res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	if err != nil {
		t.Fatal(err)
	}
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
		t.Fatalf("the Bundle was let go on a listing made before the scan was done: %v", err)
	}
	if !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("finalizers %v: let go on a listing made before the scan was done", cur.Finalizers)
	}
	if res.RequeueAfter != startScanWait {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, startScanWait)
	}
	// The next pass lists with the scan done: it lets the Bundle go.
	f.reconcile(t)
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err == nil && slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Errorf("the Bundle is still held after a pass whose listing came after the scan")
	}
}

// A 404 on the teardown's last listing of the Bundle's objects, for a kind
// discovery still serves, is not the kind's end: the API server answers 404
// for a served custom resource for a moment at times (its storage
// restarting). The pass fails and is retried; before, it took the kind for
// empty and let the Bundle go, and the garbage collector deleted at once an
// object of it that the cache did not show yet.
func TestTeardownTransient404IsNoKindGone(t *testing.T) {
	b := deletedBundle([]limbov1alpha1.Resource{configMapResource(t, "cm")}, limbov1alpha1.BundleStatus{ObservedGeneration: 1})
	f := newTeardownFixture(t, b, nil)
	f.r.Discovery = scanDiscovery{} // serves ConfigMaps
	f.r.APIReader = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		switch list.(type) {
		case *limbov1alpha1.BundleList, *limbov1alpha1.TombstoneList:
			return c.List(ctx, list, opts...)
		}
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
	}})
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err == nil {
		t.Error("Reconcile succeeded; want the listing's 404 as an error (retried)")
	}
	var cur limbov1alpha1.Bundle
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil || !slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Fatalf("the Bundle was let go on a listing answered 404 for a kind still served (%v, finalizers %v)", err, cur.Finalizers)
	}
	// Gone from discovery too: the kind is gone, and so are its objects.
	f.r.Discovery = scanDiscovery{drop: "ConfigMap"}
	f.reconcile(t)
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err == nil && slices.Contains(cur.Finalizers, limbov1alpha1.FinalizerTeardown) {
		t.Error("the Bundle is still held once discovery no longer serves the kind")
	}
}

// notEndpointCopies is what every selector of the start scan begins with
// (ManagedSelector: limboscan.NotEndpointCopies), sorted by key.
const notEndpointCopies = "endpoints.kubernetes.io/managed-by notin (endpoint-controller)," +
	"endpointslice.kubernetes.io/managed-by notin (endpointslice-controller.k8s.io,endpointslicemirroring-controller.k8s.io),"
