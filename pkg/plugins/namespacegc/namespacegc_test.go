package namespacegc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugin/plugintest"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/storageos"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

const secretName = "storageos-api"

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is one plugin against a StorageOS simulator (over HTTP) and a fake
// Kubernetes API holding Namespaces and the credentials Secret.
type fixture struct {
	t      *testing.T
	sim    *storageossim.Server
	url    string
	k8s    client.WithWatch
	plugin *namespacegc.Plugin
	bundle *limbov1alpha1.Bundle

	mu sync.Mutex
	// beforeDelete, when set, runs before the simulator answers a
	// DELETE /v2/namespaces/{id}: it makes races happen on cue.
	beforeDelete func(r *http.Request)
	// answer, when set, may answer a request in the simulator's place (a
	// proxy's page, an endpoint that moved): it returns true when it did.
	answer func(w http.ResponseWriter, r *http.Request) bool
}

func newFixture(t *testing.T, opts namespacegc.Options, k8sNamespaces ...string) *fixture {
	t.Helper()
	return newFixtureOf(t, storageossim.Config{}, opts, k8sNamespaces...)
}

// newFixtureOf is newFixture with a simulator configured as sim says, but for
// its credentials, which are the Secret's.
func newFixtureOf(t *testing.T, sim storageossim.Config, opts namespacegc.Options, k8sNamespaces ...string) *fixture {
	t.Helper()
	sim.Username, sim.Password = "admin", "s3cret"
	f := &fixture{t: t, sim: storageossim.New(sim), plugin: namespacegc.New(opts)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		hook, answer := f.beforeDelete, f.answer
		f.mu.Unlock()
		if answer != nil && answer(w, r) {
			return
		}
		if hook != nil && r.Method == http.MethodDelete {
			hook(r)
		}
		f.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	objs := []client.Object{&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: "team"},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("s3cret")},
	}}
	for _, name := range k8sNamespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	f.k8s = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
	f.bundle = &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "storage", Namespace: "team", UID: types.UID("uid-" + t.Name())}}
	return f
}

// spec is the plugin spec pointing at the simulator; extra holds further fields.
func (f *fixture) spec(extra string) []byte {
	s := fmt.Sprintf(`{"storageos":{"endpoint":%q,"credentialsSecretRef":{"name":%q}}`, f.url, secretName)
	if extra != "" {
		s += "," + extra
	}
	return []byte(s + "}")
}

func (f *fixture) request(spec []byte, now time.Time) plugin.Request {
	return plugin.Request{Bundle: f.bundle, Resource: "storage-ns-gc", Spec: spec, Client: f.k8s, Reader: f.k8s, Now: now}
}

func (f *fixture) plan(spec []byte, now time.Time) (*plugin.Result, error) {
	return f.plugin.Plan(context.Background(), f.request(spec, now))
}

func (f *fixture) mustPlan(spec []byte, now time.Time) *plugin.Result {
	f.t.Helper()
	res, err := f.plan(spec, now)
	if err != nil {
		f.t.Fatalf("Plan at %v: %v", now.Sub(t0), err)
	}
	return res
}

func (f *fixture) deleteExternal(spec []byte, name string) error {
	f.t.Helper()
	ns, ok := f.sim.Namespace(name)
	if !ok {
		f.t.Fatalf("no backend namespace %q", name)
	}
	return f.deleteItem(spec, limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: ns.ID, Name: namespacegc.ItemName(name, f.url)})
}

func (f *fixture) deleteItem(spec []byte, item limbov1alpha1.ExternalItem) error {
	return f.plugin.DeleteExternal(context.Background(), f.request(spec, t0), item)
}

// answerWith puts answer in front of the simulator: a request it answers
// (true) does not reach it; nil takes it away.
func (f *fixture) answerWith(answer func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = answer
}

func (f *fixture) onDelete(hook func(r *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beforeDelete = hook
}

func (f *fixture) createNamespace(name string) {
	f.t.Helper()
	if err := f.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deleteNamespace(name string) {
	f.t.Helper()
	if err := f.k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		f.t.Fatal(err)
	}
}

// terminate makes the Kubernetes Namespace name Terminating: deleted, held by a
// finalizer, as the namespace controller is still emptying it.
func (f *fixture) terminate(name string) {
	f.t.Helper()
	ctx := context.Background()
	var ns corev1.Namespace
	if err := f.k8s.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		f.t.Fatal(err)
	}
	ns.Finalizers = []string{"limbo.dev/test-hold"}
	if err := f.k8s.Update(ctx, &ns); err != nil {
		f.t.Fatal(err)
	}
	f.deleteNamespace(name)
	if err := f.k8s.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil || ns.DeletionTimestamp.IsZero() {
		f.t.Fatalf("namespace %s not terminating: %v %+v", name, err, ns.ObjectMeta)
	}
}

// judged returns the inventory as name → desired, checking each item's kind and
// id against the simulator.
func (f *fixture) judged(res *plugin.Result) map[string]bool {
	f.t.Helper()
	out := map[string]bool{}
	if res.Inventory == nil {
		f.t.Fatal("no inventory")
	}
	if len(res.Inventory.Objects) != 0 || res.Inventory.EmptyDesiredIsValid {
		f.t.Errorf("inventory = %+v, want external items only and the empty-desired safety rule on", res.Inventory)
	}
	for _, item := range res.Inventory.External {
		name, _ := plugin.SplitItemName(item.Name)
		ns, ok := f.sim.Namespace(name)
		if !ok || item.ID != ns.ID || item.Kind != namespacegc.ItemKind || item.Name != namespacegc.ItemName(name, f.url) {
			f.t.Errorf("item %+v does not match the backend namespace %+v on %s", item, ns, f.url)
		}
		if _, dup := out[name]; dup {
			f.t.Errorf("item %q listed twice", name)
		}
		out[name] = item.Desired
	}
	return out
}

// orphans returns the sorted names the framework would orphan.
func orphans(t *testing.T, res *plugin.Result) []string {
	t.Helper()
	_, ext, err := res.Inventory.Orphans()
	if err != nil {
		t.Fatalf("Orphans: %v", err)
	}
	var names []string
	for _, e := range ext {
		name, _ := plugin.SplitItemName(e.Name)
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func expectJudged(t *testing.T, got map[string]bool, want map[string]bool) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inventory (name → desired) = %v, want %v", got, want)
	}
}

// noGC keeps the periodic GC out of the way of deletion-driven tests.
const noGC = `"gcInterval":"0s"`

func TestDescribe(t *testing.T) {
	d := namespacegc.New(namespacegc.Options{}).Describe()
	if d.Name != "namespace-gc" || namespacegc.ItemKind != "StorageOSNamespace" {
		t.Errorf("Name = %q, ItemKind = %q", d.Name, namespacegc.ItemKind)
	}
	if len(d.Watches) != 1 || reflect.TypeOf(d.Watches[0]) != reflect.TypeOf(&corev1.Namespace{}) {
		t.Errorf("Watches = %v, want Namespaces (the deletion trigger)", d.Watches)
	}
	var p plugin.Plugin = namespacegc.New(namespacegc.Options{})
	if _, ok := p.(plugin.ExternalDeleter); !ok {
		t.Error("namespace-gc must delete external items")
	}
}

func TestSchema(t *testing.T) {
	const base = `"storageos":{"endpoint":"http://storageos:5705","credentialsSecretRef":{"name":"api"}}`
	const durationRe = `'` + plugin.DurationPattern + `'`
	const gcIntervalRange = `must be 0s (disabled) or a duration of at least 1s (90s, 1h30m)`
	const noScheme = `must start with http:// or https:// (for example http://storageos:5705)`
	plugintest.ExpectSpecs(t, namespacegc.New(namespacegc.Options{}), []plugintest.SpecCase{
		{Spec: `{` + base + `}`},
		{Spec: `{` + base + `,"gcInterval":"1h","gcDelay":"20s","exclude":["default","kube-system"]}`},
		{Spec: `{` + base + `,"gcInterval":"0s","gcDelay":"0"}`},
		{Spec: `{` + base + `,"gcInterval":"1h30m","gcDelay":"1.5s","exclude":[]}`},
		{Spec: `{` + base + `,"gcInterval":"1s","gcDelay":"1ns"}`},
		{Spec: `{` + base + `,"gcInterval":"2562047h"}`},
		// What the schema lets through and the plugin's parse refuses (CheckSpec):
		// a collection (a login and a listing) about every pass.
		{Spec: `{` + base + `,"gcInterval":"1ns"}`, Want: `spec.gcInterval: Invalid value: "1ns": ` + gcIntervalRange},
		{Spec: `{` + base + `,"gcInterval":"999ms"}`, Want: `spec.gcInterval: Invalid value: "999ms": ` + gcIntervalRange},
		{Spec: `{}`, Want: `spec.storageos: Required value`},
		{Spec: `{"storageos":{}}`, Want: `[spec.storageos.credentialsSecretRef: Required value, spec.storageos.endpoint: Required value]`},
		{Spec: `{"storageos":{"endpoint":"","credentialsSecretRef":{"name":"api"}}}`,
			Want: `spec.storageos.endpoint: Invalid value: "": storageos.endpoint in body should be at least 1 chars long`},
		{Spec: `{"storageos":{"endpoint":"x","credentialsSecretRef":{}}}`, Want: `spec.storageos.credentialsSecretRef.name: Required value`},
		{Spec: `{` + base + `,"gcInterval":"1 hour"}`, Want: `spec.gcInterval: Invalid value: "1 hour": gcInterval in body should match ` + durationRe},
		{Spec: `{` + base + `,"gcDelay":"-1s"}`, Want: `spec.gcDelay: Invalid value: "-1s": gcDelay in body should match ` + durationRe},
		{Spec: `{` + base + `,"gcInterval":3600}`, Want: `spec.gcInterval: Invalid value: "number": gcInterval in body must be of type string: "number"`},
		{Spec: `{` + base + `,"exclude":"default"}`, Want: `spec.exclude: Invalid value: "string": exclude in body must be of type array: "string"`},
		{Spec: `{` + base + `,"gcinterval":"1h"}`, Want: `spec: Invalid value: "gcinterval": .gcinterval in body is a forbidden property`},
		// An endpoint the client cannot use is a spec error, not a failure of every plan.
		{Spec: `{"storageos":{"endpoint":"storageos.kube-system:5705","credentialsSecretRef":{"name":"api"}}}`,
			Want: `spec.storageos.endpoint: Invalid value: "storageos.kube-system:5705": storageos: invalid endpoint "storageos.kube-system:5705": ` + noScheme},
		// An IP address and port: Go's URL parser fails on it ("first path segment
		// in URL cannot contain colon"), which says nothing of the missing scheme.
		{Spec: `{"storageos":{"endpoint":"127.0.0.1:5705","credentialsSecretRef":{"name":"api"}}}`,
			Want: `spec.storageos.endpoint: Invalid value: "127.0.0.1:5705": storageos: invalid endpoint "127.0.0.1:5705": ` + noScheme},
		{Spec: `{"storageos":{"endpoint":"[::1]:5705","credentialsSecretRef":{"name":"api"}}}`,
			Want: `spec.storageos.endpoint: Invalid value: "[::1]:5705": storageos: invalid endpoint "[::1]:5705": ` + noScheme},
		{Spec: `{"storageos":{"endpoint":"ftp://storageos:5705","credentialsSecretRef":{"name":"api"}}}`,
			Want: `spec.storageos.endpoint: Invalid value: "ftp://storageos:5705": storageos: invalid endpoint "ftp://storageos:5705": ` + noScheme},
		{Spec: `{"storageos":{"endpoint":"http://admin:secret@storageos:5705","credentialsSecretRef":{"name":"api"}}}`,
			Want: `spec.storageos.endpoint: Invalid value: "http://admin:secret@storageos:5705": storageos: invalid endpoint "http://admin:secret@storageos:5705": credentials must not be part of the URL`},
	})
}

// A backend namespace whose Kubernetes Namespace the plugin saw disappear is an
// orphan from the next plan on, and stays one until the Namespace comes back or
// the backend namespace goes.
func TestPlanDeletionDrivenOrphan(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a", "b")
	f.sim.AddNamespace("a")
	f.sim.AddNamespace("b")
	spec := f.spec(noGC)

	res := f.mustPlan(spec, t0)
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "a": true, "b": true})
	if !res.Ready || res.Message != "3 StorageOS namespaces, 0 orphaned" || res.PollAfter != 0 || len(res.Objects) != 0 {
		t.Errorf("result = %+v, want Ready, \"3 StorageOS namespaces, 0 orphaned\", no poll (GC off), no objects", res)
	}

	f.deleteNamespace("a")
	res = f.mustPlan(spec, t0.Add(time.Second))
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "a": false, "b": true})
	if got := orphans(t, res); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("orphans = %q, want [a]", got)
	}
	if res.Message != "3 StorageOS namespaces, 1 orphaned" {
		t.Errorf("message = %q", res.Message)
	}

	// Remembered: later plans (no further event) still call it an orphan.
	res = f.mustPlan(spec, t0.Add(2*time.Second))
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "a": false, "b": true})

	// The Namespace comes back: desired again (the engine cancels the Tombstone).
	f.createNamespace("a")
	res = f.mustPlan(spec, t0.Add(3*time.Second))
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "a": true, "b": true})

	// Deleted again, then the backend namespace goes (the Tombstone deleted it):
	// it leaves the inventory, and a later backend namespace of that name, never
	// seen with a Kubernetes Namespace, waits for the GC.
	f.deleteNamespace("a")
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(4*time.Second))), map[string]bool{"default": true, "a": false, "b": true})
	removeBackendNamespace(t, f.sim, "a")
	res = f.mustPlan(spec, t0.Add(5*time.Second))
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "b": true})
	if res.Message != "2 StorageOS namespaces, 0 orphaned" {
		t.Errorf("message = %q", res.Message)
	}
	f.sim.AddNamespace("a")
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(6*time.Second))), map[string]bool{"default": true, "b": true})
}

// ForgetBundle drops what the plugin remembered of the Bundle: a resource of the
// same UID (which no real Bundle reuses) starts afresh, without the Namespaces it
// saw, so a deletion it did not see is not an orphan.
func TestForgetBundle(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	spec := f.spec(noGC)
	f.mustPlan(spec, t0)
	f.plugin.ForgetBundle(f.bundle.UID)
	f.deleteNamespace("a")
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{"default": true})
}

// A backend namespace that never had a Kubernetes Namespace (while the plugin
// watched) is judged only by the periodic GC: first gcDelay after the plugin
// first runs, then every gcInterval. The plan asks to run again at the next GC.
func TestPlanGCRun(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	f.sim.AddNamespace("stray")
	spec := f.spec(`"gcInterval":"10m","gcDelay":"1m"`)

	for _, step := range []struct {
		at        time.Duration
		addStray2 bool
		want      map[string]bool
		pollAfter time.Duration
		message   string
	}{
		{at: 0, want: map[string]bool{"default": true, "a": true}, pollAfter: time.Minute, message: "3 StorageOS namespaces, 0 orphaned"},
		{at: 30 * time.Second, want: map[string]bool{"default": true, "a": true}, pollAfter: 30 * time.Second},
		{at: 59 * time.Second, want: map[string]bool{"default": true, "a": true}, pollAfter: time.Second},
		// First GC run, gcDelay after the first plan.
		{at: time.Minute, want: map[string]bool{"default": true, "a": true, "stray": false}, pollAfter: 10 * time.Minute, message: "3 StorageOS namespaces, 1 orphaned"},
		// Between runs: the GC's orphans stay orphans; a new stray waits.
		{at: 2 * time.Minute, addStray2: true, want: map[string]bool{"default": true, "a": true, "stray": false}, pollAfter: 9 * time.Minute, message: "4 StorageOS namespaces, 1 orphaned"},
		{at: 10*time.Minute + 59*time.Second, want: map[string]bool{"default": true, "a": true, "stray": false}, pollAfter: time.Second},
		// Second run, gcInterval after the first.
		{at: 11 * time.Minute, want: map[string]bool{"default": true, "a": true, "stray": false, "stray2": false}, pollAfter: 10 * time.Minute, message: "4 StorageOS namespaces, 2 orphaned"},
	} {
		if step.addStray2 {
			f.sim.AddNamespace("stray2")
		}
		res := f.mustPlan(spec, t0.Add(step.at))
		expectJudged(t, f.judged(res), step.want)
		if res.PollAfter != step.pollAfter {
			t.Errorf("at %v: PollAfter = %v, want %v", step.at, res.PollAfter, step.pollAfter)
		}
		if step.message != "" && res.Message != step.message {
			t.Errorf("at %v: message = %q, want %q", step.at, res.Message, step.message)
		}
	}
}

// A late plan (the controller was busy, or down) runs the GC once and schedules
// the next run gcInterval after it, not at the missed ticks.
func TestPlanGCRunLate(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default")
	f.sim.AddNamespace("stray")
	spec := f.spec(`"gcInterval":"10m","gcDelay":"1m"`)
	f.mustPlan(spec, t0)
	res := f.mustPlan(spec, t0.Add(time.Hour))
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "stray": false})
	if res.PollAfter != 10*time.Minute {
		t.Errorf("PollAfter = %v, want 10m", res.PollAfter)
	}
}

// An edit of gcInterval or gcDelay takes effect at once: the next collection is
// due by the new values (gcDelay after the first plan, gcInterval after the
// last collection), not at the time the old values had scheduled.
func TestPlanGCScheduleEdited(t *testing.T) {
	for _, tt := range []struct {
		name            string
		before, after   string
		editAt, checkAt time.Duration
		wantPollAfter   time.Duration
	}{
		{name: "gcInterval shortened", before: `"gcInterval":"24h","gcDelay":"0s"`, after: `"gcInterval":"1m","gcDelay":"0s"`,
			editAt: 2 * time.Minute, checkAt: 2 * time.Minute, wantPollAfter: time.Minute},
		{name: "gcDelay shortened before the first collection", before: `"gcInterval":"1h","gcDelay":"1h"`, after: `"gcInterval":"1h","gcDelay":"1m"`,
			editAt: 30 * time.Second, checkAt: time.Minute, wantPollAfter: time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, namespacegc.Options{}, "default")
			f.mustPlan(f.spec(tt.before), t0)
			f.sim.AddNamespace("stray")
			if res := f.mustPlan(f.spec(tt.after), t0.Add(tt.editAt)); tt.checkAt != tt.editAt {
				expectJudged(t, f.judged(res), map[string]bool{"default": true}) // not collected yet
			}
			res := f.mustPlan(f.spec(tt.after), t0.Add(tt.checkAt))
			expectJudged(t, f.judged(res), map[string]bool{"default": true, "stray": false})
			if res.PollAfter != tt.wantPollAfter {
				t.Errorf("PollAfter = %v, want %v", res.PollAfter, tt.wantPollAfter)
			}
		})
	}
}

// gcDelay 0s: the first plan is a GC run.
func TestPlanGCDelayZero(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default")
	f.sim.AddNamespace("stray")
	res := f.mustPlan(f.spec(`"gcInterval":"1h","gcDelay":"0s"`), t0)
	expectJudged(t, f.judged(res), map[string]bool{"default": true, "stray": false})
	if res.PollAfter != time.Hour {
		t.Errorf("PollAfter = %v, want 1h", res.PollAfter)
	}
}

// gcInterval 0s disables the GC: a namespace that never had a Kubernetes
// Namespace is never judged, and nothing asks for a poll. Deletion-driven orphans
// still work.
func TestPlanGCDisabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts namespacegc.Options
		spec string
	}{
		{name: "by the spec", opts: namespacegc.Options{DefaultInterval: time.Hour, DefaultDelay: time.Second}, spec: `"gcInterval":"0s","gcDelay":"0s"`},
		{name: "by the spec, bare 0", opts: namespacegc.Options{DefaultInterval: time.Hour}, spec: `"gcInterval":"0"`},
		{name: "by the controller default", opts: namespacegc.Options{DefaultInterval: 0, DefaultDelay: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts, "default", "a")
			f.sim.AddNamespace("a")
			f.sim.AddNamespace("stray")
			spec := f.spec(tc.spec)
			for _, at := range []time.Duration{0, time.Second, time.Hour, 1000 * time.Hour} {
				res := f.mustPlan(spec, t0.Add(at))
				expectJudged(t, f.judged(res), map[string]bool{"default": true, "a": true})
				if res.PollAfter != 0 {
					t.Errorf("at %v: PollAfter = %v, want 0 (GC disabled)", at, res.PollAfter)
				}
			}
			f.deleteNamespace("a")
			expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(1001*time.Hour))), map[string]bool{"default": true, "a": false})
		})
	}
}

// Without gcInterval/gcDelay in the spec, the controller's defaults (flags
// --namespace-delete-gc-interval, --namespace-delete-gc-delay) apply; the spec
// overrides them.
func TestPlanGCDefaults(t *testing.T) {
	opts := namespacegc.Options{DefaultInterval: time.Hour, DefaultDelay: 20 * time.Second}
	t.Run("defaults", func(t *testing.T) {
		f := newFixture(t, opts, "default")
		f.sim.AddNamespace("stray")
		spec := f.spec("")
		if res := f.mustPlan(spec, t0); res.PollAfter != 20*time.Second {
			t.Errorf("PollAfter = %v, want 20s", res.PollAfter)
		}
		expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(19*time.Second))), map[string]bool{"default": true})
		res := f.mustPlan(spec, t0.Add(20*time.Second))
		expectJudged(t, f.judged(res), map[string]bool{"default": true, "stray": false})
		if res.PollAfter != time.Hour {
			t.Errorf("PollAfter = %v, want 1h", res.PollAfter)
		}
	})
	t.Run("spec overrides", func(t *testing.T) {
		f := newFixture(t, opts, "default")
		f.sim.AddNamespace("stray")
		spec := f.spec(`"gcInterval":"2m","gcDelay":"5s"`)
		if res := f.mustPlan(spec, t0); res.PollAfter != 5*time.Second {
			t.Errorf("PollAfter = %v, want 5s", res.PollAfter)
		}
		res := f.mustPlan(spec, t0.Add(5*time.Second))
		expectJudged(t, f.judged(res), map[string]bool{"default": true, "stray": false})
		if res.PollAfter != 2*time.Minute {
			t.Errorf("PollAfter = %v, want 2m", res.PollAfter)
		}
	})
}

// A controller default below MinGCInterval (the flag
// --namespace-delete-gc-interval=1ns) counts as MinGCInterval: the collection
// (a login and a listing) never runs about every pass; 0 still disables it.
func TestPlanGCDefaultFloor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		want     time.Duration // PollAfter after the first collection
	}{
		{"1ns", time.Nanosecond, namespacegc.MinGCInterval},
		{"just below", namespacegc.MinGCInterval - 1, namespacegc.MinGCInterval},
		{"the minimum", namespacegc.MinGCInterval, namespacegc.MinGCInterval},
		{"above", time.Minute, time.Minute},
		{"disabled", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, namespacegc.Options{DefaultInterval: tc.interval}, "default")
			f.sim.AddNamespace("stray")
			spec := f.spec(`"gcDelay":"0s"`)
			for i := range 3 {
				at := t0.Add(time.Duration(i) * tc.want)
				if res := f.mustPlan(spec, at); res.PollAfter != tc.want {
					t.Fatalf("plan %d: PollAfter = %v, want %v", i, res.PollAfter, tc.want)
				}
			}
		})
	}
}

// exclude lists backend namespaces that are never orphans; without it, the
// list is [default]. A given list replaces the default one.
func TestPlanExclude(t *testing.T) {
	for _, tc := range []struct {
		name, exclude string
		want          map[string]bool
	}{
		{name: "default", want: map[string]bool{"default": true, "a": true, "keep": false, "stray": false}},
		{name: "explicit", exclude: `"exclude":["default","keep"]`, want: map[string]bool{"default": true, "a": true, "keep": true, "stray": false}},
		{name: "replaces the default", exclude: `"exclude":["keep"]`, want: map[string]bool{"default": false, "a": true, "keep": true, "stray": false}},
		{name: "empty", exclude: `"exclude":[]`, want: map[string]bool{"default": false, "a": true, "keep": false, "stray": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No Kubernetes Namespace "default" here: only exclude protects it.
			f := newFixture(t, namespacegc.Options{}, "a")
			f.sim.AddNamespace("a")
			f.sim.AddNamespace("keep")
			f.sim.AddNamespace("stray")
			extra := `"gcInterval":"1h","gcDelay":"0s"`
			if tc.exclude != "" {
				extra += "," + tc.exclude
			}
			expectJudged(t, f.judged(f.mustPlan(f.spec(extra), t0)), tc.want)
		})
	}
}

// An excluded namespace is desired even after its Kubernetes Namespace was seen
// to go: a deletion never overrides exclude.
func TestPlanExcludeWinsOverDeletion(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	spec := f.spec(noGC)
	f.mustPlan(spec, t0)
	f.deleteNamespace("default")
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{"default": true, "a": true})
}

// An exclusion forgets the deletion seen before it: lifted again, the namespace
// is judged like any other not in Kubernetes, an orphan at the next GC run and
// not before.
func TestPlanExcludeForgetsADeletion(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	spec := f.spec(`"gcInterval":"1h","gcDelay":"1h"`)
	f.mustPlan(spec, t0)
	f.deleteNamespace("a")
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{"default": true, "a": false})
	expectJudged(t, f.judged(f.mustPlan(f.spec(`"gcInterval":"1h","gcDelay":"1h","exclude":["default","a"]`), t0.Add(2*time.Second))), map[string]bool{"default": true, "a": true})
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(3*time.Second))), map[string]bool{"default": true})
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Hour))), map[string]bool{"default": true, "a": false})
}

// A Terminating Namespace counts as gone: its deletion has begun, and the
// namespace controller is emptying it.
func TestPlanTerminatingNamespaceCountsAsGone(t *testing.T) {
	t.Run("deletionTimestamp", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default", "a")
		f.sim.AddNamespace("a")
		spec := f.spec(noGC)
		expectJudged(t, f.judged(f.mustPlan(spec, t0)), map[string]bool{"default": true, "a": true})
		f.terminate("a")
		expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{"default": true, "a": false})
	})
	t.Run("phase Terminating", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default", "a")
		f.sim.AddNamespace("a")
		spec := f.spec(noGC)
		f.mustPlan(spec, t0)
		var ns corev1.Namespace
		if err := f.k8s.Get(context.Background(), client.ObjectKey{Name: "a"}, &ns); err != nil {
			t.Fatal(err)
		}
		ns.Status.Phase = corev1.NamespaceTerminating
		if err := f.k8s.Status().Update(context.Background(), &ns); err != nil {
			t.Fatal(err)
		}
		expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{"default": true, "a": false})
	})
	t.Run("a GC run judges a Terminating Namespace's backend namespace an orphan", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default", "a")
		f.sim.AddNamespace("a")
		f.terminate("a")
		expectJudged(t, f.judged(f.mustPlan(f.spec(`"gcInterval":"1h","gcDelay":"0s"`), t0)), map[string]bool{"default": true, "a": false})
	})
}

// A Namespace that is already Terminating when the plugin first lists it (the
// controller started, or the Bundle was created, during the namespace's
// deletion) is a deletion the plugin sees: the seed controller reacts to the
// Namespace's Delete event, whenever its informer first saw the object.
func TestPlanNamespaceTerminatingAtFirstSightIsADeletion(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	f.terminate("a")
	spec := f.spec(noGC)
	res := f.mustPlan(spec, t0)
	if got := f.judged(res); got["a"] || !reflect.DeepEqual(got, map[string]bool{"default": true, "a": false}) {
		t.Errorf("terminating at first sight: inventory = %v, want a orphaned (the deletion is under way)", got)
	}
	// Whatever the first plan said, once the Namespace is gone it was a deletion.
	var ns corev1.Namespace
	if err := f.k8s.Get(context.Background(), client.ObjectKey{Name: "a"}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Finalizers = nil // the namespace controller is done: the Namespace goes
	if err := f.k8s.Update(context.Background(), &ns); err != nil {
		t.Fatal(err)
	}
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{"default": true, "a": false})
}

// Safety: with no Kubernetes Namespace listed (or only Terminating ones) the
// desired side is unknown: the plan fails and the backend is not even listed.
func TestPlanNoNamespacesListedIsAnError(t *testing.T) {
	const want = "no Kubernetes Namespace listed: refusing to compute orphans"
	t.Run("none", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{})
		f.sim.AddNamespace("a")
		res, err := f.plan(f.spec(`"gcInterval":"1h","gcDelay":"0s"`), t0)
		if err == nil || err.Error() != want || res != nil {
			t.Fatalf("Plan = %+v, %v; want nil, %q", res, err, want)
		}
		if n := f.sim.Calls(storageossim.OpListNamespaces); n != 0 {
			t.Errorf("%d backend lists, want 0", n)
		}
	})
	t.Run("only terminating", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "a")
		f.sim.AddNamespace("a")
		f.terminate("a")
		if _, err := f.plan(f.spec(`"gcInterval":"1h","gcDelay":"0s"`), t0); err == nil || err.Error() != want {
			t.Fatalf("Plan error = %v, want %q", err, want)
		}
	})
}

// A backend outage fails the plan (no inventory, so no orphans and no cancels),
// and a failed plan forgets nothing: a deletion seen before the outage is an
// orphan after it.
func TestPlanBackendOutage(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	spec := f.spec(noGC)
	f.mustPlan(spec, t0)

	f.sim.SetOutage(true)
	f.deleteNamespace("a")
	res, err := f.plan(spec, t0.Add(time.Second))
	if res != nil || err == nil {
		t.Fatalf("Plan during an outage = %+v, %v; want an error", res, err)
	}
	var apiErr *storageos.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(err.Error(), "list StorageOS namespaces: ") {
		t.Errorf("error = %v, want \"list StorageOS namespaces: \" and the API's 503", err)
	}
	if !strings.Contains(err.Error(), storageossim.MsgUnavailable) {
		t.Errorf("error %q does not carry the API's message", err)
	}

	f.sim.SetOutage(false)
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(2*time.Second))), map[string]bool{"default": true, "a": false})
}

func TestPlanCredentials(t *testing.T) {
	t.Run("missing Secret", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		if err := f.k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: "team"}}); err != nil {
			t.Fatal(err)
		}
		_, err := f.plan(f.spec(noGC), t0)
		if want := `credentials Secret "storageos-api": secrets "storageos-api" not found`; err == nil || err.Error() != want {
			t.Errorf("error = %v, want %q", err, want)
		}
	})
	t.Run("missing key", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		var s corev1.Secret
		_ = f.k8s.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: secretName}, &s)
		delete(s.Data, "password")
		if err := f.k8s.Update(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		_, err := f.plan(f.spec(noGC), t0)
		if want := `credentials Secret "storageos-api" needs the keys username and password`; err == nil || err.Error() != want {
			t.Errorf("error = %v, want %q", err, want)
		}
	})
	t.Run("Secret in another namespace than the Bundle's is not used", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		f.bundle.Namespace = "other-team"
		if _, err := f.plan(f.spec(noGC), t0); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("error = %v, want the Secret not found in the Bundle's namespace", err)
		}
	})
	t.Run("rejected credentials", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		f.sim.SetCredentials("admin", "rotated")
		_, err := f.plan(f.spec(noGC), t0)
		if !errors.Is(err, storageos.ErrUnauthorized) {
			t.Errorf("error = %v, want storageos.ErrUnauthorized", err)
		}
	})
	t.Run("session reused across calls", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		spec := f.spec(noGC)
		for i := range 3 {
			f.mustPlan(spec, t0.Add(time.Duration(i)*time.Second))
		}
		if n := f.sim.Calls(storageossim.OpLogin); n != 1 {
			t.Errorf("%d logins for 3 plans, want 1", n)
		}
	})
}

// Every API call is counted in limbo_storageos_requests_total{operation,code}.
func TestPlanMetrics(t *testing.T) {
	m := storageos.NewMetrics(prometheus.NewRegistry())
	list := m.RequestsTotal.WithLabelValues(storageos.OpListNamespaces, "200")
	unavailable := m.RequestsTotal.WithLabelValues(storageos.OpLogin, "503")

	f := newFixture(t, namespacegc.Options{Metrics: m}, "default")
	f.mustPlan(f.spec(noGC), t0)
	if got := testutil.ToFloat64(list); got != 1 {
		t.Errorf("list_namespaces/200 = %v, want 1", got)
	}
	g := newFixture(t, namespacegc.Options{Metrics: m}, "default")
	g.sim.SetOutage(true)
	_, _ = g.plan(g.spec(noGC), t0)
	if got := testutil.ToFloat64(unavailable); got != 1 {
		t.Errorf("login/503 = %v, want 1", got)
	}
}

// ---- DeleteExternal ----

func TestDeleteExternal(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default")
	f.sim.AddNamespace("a")
	f.sim.AddNamespace("b")
	if err := f.deleteExternal(f.spec(""), "a"); err != nil {
		t.Fatalf("DeleteExternal: %v", err)
	}
	if _, ok := f.sim.Namespace("a"); ok {
		t.Error("backend namespace a still exists")
	}
	if _, ok := f.sim.Namespace("b"); !ok {
		t.Error("backend namespace b was deleted too")
	}
	if n := f.sim.Calls(storageossim.OpDeleteNamespace); n != 1 {
		t.Errorf("%d DELETE calls, want 1", n)
	}
}

// Gone is success, whether the list no longer has it or the DELETE says 404.
func TestDeleteExternalGoneIsSuccess(t *testing.T) {
	t.Run("not listed", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		err := f.deleteItem(f.spec(""), limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: "5f2b8a4e-0000-4000-8000-000000000000", Name: "gone"})
		if err != nil {
			t.Fatalf("DeleteExternal = %v, want nil", err)
		}
		if n := f.sim.Calls(storageossim.OpDeleteNamespace); n != 0 {
			t.Errorf("%d DELETE calls, want 0", n)
		}
	})
	t.Run("404 on DELETE", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		f.sim.AddNamespace("a")
		var once sync.Once
		f.onDelete(func(*http.Request) { once.Do(func() { removeBackendNamespace(t, f.sim, "a") }) })
		if err := f.deleteExternal(f.spec(""), "a"); err != nil {
			t.Fatalf("DeleteExternal = %v, want nil (404 is success)", err)
		}
	})
	t.Run("re-created with a new id", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		old := f.sim.AddNamespace("a")
		removeBackendNamespace(t, f.sim, "a")
		f.sim.AddNamespace("a")
		deletesBefore := f.sim.Calls(storageossim.OpDeleteNamespace)
		if err := f.deleteItem(f.spec(""), limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: old.ID, Name: "a"}); err != nil {
			t.Fatalf("DeleteExternal = %v, want nil", err)
		}
		if _, ok := f.sim.Namespace("a"); !ok || f.sim.Calls(storageossim.OpDeleteNamespace) != deletesBefore {
			t.Error("the new namespace of the same name was deleted: items are identified by id")
		}
	})
}

// A 404 that is not the namespace's — a proxy's page for the DELETE, or a 404
// to the login the DELETE's 401 led to — does not end the Tombstone as
// deleted: the namespace is still listed, so DeleteExternal fails (and the
// Tombstone retries) instead of reporting a deletion that did not happen.
func TestDeleteExternalForeign404(t *testing.T) {
	tests := []struct {
		name   string
		answer func(deleted *bool) func(w http.ResponseWriter, r *http.Request) bool
		want   string
		// notFound: the error wraps storageos.ErrNotFound (the delete's 404),
		// which a 404 to a login must not.
		notFound bool
	}{
		{
			name: "a proxy's 404 page for the DELETE",
			answer: func(*bool) func(w http.ResponseWriter, r *http.Request) bool {
				return func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method != http.MethodDelete {
						return false
					}
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(http.StatusNotFound)
					_, _ = io.WriteString(w, "<html><body><h1>404 Not Found</h1>default backend</body></html>")
					return true
				}
			},
			want:     "still listed after its delete answered 404",
			notFound: true,
		},
		{
			name: "a 404 to the login after the DELETE's 401",
			answer: func(deleted *bool) func(w http.ResponseWriter, r *http.Request) bool {
				return func(w http.ResponseWriter, r *http.Request) bool {
					switch {
					case r.Method == http.MethodDelete:
						*deleted = true
						w.WriteHeader(http.StatusUnauthorized)
						_, _ = io.WriteString(w, `{"error":"authentication required"}`)
						return true
					case *deleted && r.URL.Path == "/v2/auth/login":
						w.WriteHeader(http.StatusNotFound)
						_, _ = io.WriteString(w, "404 page not found")
						return true
					}
					return false
				}
			},
			want: "login: HTTP 404",
		},
		{
			// Two stale versions, then a proxy's 404: the 404 is still
			// confirmed by a listing, not reported as a namespace that kept
			// changing.
			name: "a proxy's 404 page after two stale versions",
			answer: func(*bool) func(w http.ResponseWriter, r *http.Request) bool {
				deletes := 0
				return func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method != http.MethodDelete {
						return false
					}
					if deletes++; deletes <= 2 {
						w.WriteHeader(http.StatusPreconditionFailed)
						_, _ = io.WriteString(w, `{"error":"namespace version mismatch"}`)
						return true
					}
					http.NotFound(w, r)
					return true
				}
			},
			want:     "still listed after its delete answered 404",
			notFound: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, namespacegc.Options{}, "default")
			f.sim.AddNamespace("a")
			var deleted bool
			f.answerWith(tt.answer(&deleted))
			err := f.deleteExternal(f.spec(""), "a")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DeleteExternal = %v, want an error containing %q", err, tt.want)
			}
			if got := errors.Is(err, storageos.ErrNotFound); got != tt.notFound {
				t.Errorf("DeleteExternal = %v: matches storageos.ErrNotFound %v, want %v", err, got, tt.notFound)
			}
			if _, ok := f.sim.Namespace("a"); !ok {
				t.Fatal("backend namespace a is gone: the test's 404 did not stand in for the simulator")
			}
		})
	}
}

// An item found on another endpoint than the spec names now is refused as not
// responsible (its Tombstone is cancelled) without a call to either endpoint:
// not found on the new one, it would have been reported deleted, and one of the
// same ID there deleted without its countdown. An item named without its
// endpoint (by an older limbo) is judged on the current one.
func TestDeleteExternalEndpointChanged(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default")
	ns := f.sim.AddNamespace("a")
	calls := func() int {
		return f.sim.Calls(storageossim.OpLogin) + f.sim.Calls(storageossim.OpListNamespaces) + f.sim.Calls(storageossim.OpDeleteNamespace)
	}
	moved := limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: ns.ID, Name: namespacegc.ItemName("a", "http://storageos.old:5705")}
	err := f.deleteItem(f.spec(""), moved)
	if !errors.Is(err, plugin.ErrNotResponsible) || !strings.Contains(err.Error(), "was found on StorageOS http://storageos.old:5705") {
		t.Errorf("DeleteExternal of an item of another endpoint = %v, want a refusal naming the endpoint, wrapping plugin.ErrNotResponsible", err)
	}
	if n := calls(); n != 0 {
		t.Errorf("%d StorageOS calls, want none", n)
	}
	if _, ok := f.sim.Namespace("a"); !ok {
		t.Fatal("backend namespace a was deleted")
	}
	if err := f.deleteItem(f.spec(""), limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: ns.ID, Name: "a"}); err != nil {
		t.Fatalf("DeleteExternal of an item named without its endpoint: %v", err)
	}
	if _, ok := f.sim.Namespace("a"); ok {
		t.Error("backend namespace a still exists")
	}
}

// 409: the namespace still holds volumes. The error says so and wraps
// storageos.ErrNamespaceNotEmpty; the Tombstone retries it with backoff.
func TestDeleteExternalInUse(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default")
	f.sim.AddNamespace("a")
	if err := f.sim.SetVolumes("a", 2); err != nil {
		t.Fatal(err)
	}
	err := f.deleteExternal(f.spec(""), "a")
	if !errors.Is(err, storageos.ErrNamespaceNotEmpty) {
		t.Fatalf("error = %v, want storageos.ErrNamespaceNotEmpty", err)
	}
	if want := `StorageOS namespace "a" still holds volumes: storageos: delete_namespace: HTTP 409 Conflict: in use`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if _, ok := f.sim.Namespace("a"); !ok {
		t.Fatal("a namespace with volumes was deleted")
	}
	if n := f.sim.Calls(storageossim.OpDeleteNamespace); n != 1 {
		t.Errorf("%d DELETE calls, want 1 (the retry is the Tombstone's, with backoff)", n)
	}
	// Emptied: the next attempt succeeds.
	_ = f.sim.SetVolumes("a", 0)
	if err := f.deleteExternal(f.spec(""), "a"); err != nil {
		t.Fatalf("DeleteExternal after emptying: %v", err)
	}
}

// 412: the namespace changed since it was listed; list again and retry with the
// new version. A 409 that is not "in use" is the same: StorageOS's OpenAPI
// document says 409 for a stale version too (in its version parameter's text).
func TestDeleteExternalStaleVersion(t *testing.T) {
	for _, answer := range []struct {
		name string
		sim  storageossim.Config
	}{
		{"412", storageossim.Config{}},
		{"409", storageossim.Config{StaleVersionConflict: true}},
	} {
		t.Run(answer.name+"/once", func(t *testing.T) {
			f := newFixtureOf(t, answer.sim, namespacegc.Options{}, "default")
			f.sim.AddNamespace("a")
			var once sync.Once
			f.onDelete(func(*http.Request) {
				once.Do(func() {
					if _, err := f.sim.SetLabels("a", map[string]string{"changed": "true"}); err != nil {
						t.Error(err)
					}
				})
			})
			if err := f.deleteExternal(f.spec(""), "a"); err != nil {
				t.Fatalf("DeleteExternal = %v, want success after a re-list", err)
			}
			if _, ok := f.sim.Namespace("a"); ok {
				t.Error("still exists")
			}
			if l, d := f.sim.Calls(storageossim.OpListNamespaces), f.sim.Calls(storageossim.OpDeleteNamespace); l != 2 || d != 2 {
				t.Errorf("%d lists and %d DELETEs, want 2 and 2", l, d)
			}
		})
		t.Run(answer.name+"/always", func(t *testing.T) {
			f := newFixtureOf(t, answer.sim, namespacegc.Options{}, "default")
			f.sim.AddNamespace("a")
			f.onDelete(func(*http.Request) {
				if _, err := f.sim.SetLabels("a", map[string]string{"at": time.Now().String()}); err != nil {
					t.Error(err)
				}
			})
			err := f.deleteExternal(f.spec(""), "a")
			if !errors.Is(err, storageos.ErrStaleVersion) || err.Error() != `StorageOS namespace "a" kept changing: storageos: stale version` {
				t.Fatalf("error = %v, want it to wrap storageos.ErrStaleVersion", err)
			}
			if d := f.sim.Calls(storageossim.OpDeleteNamespace); d != 3 {
				t.Errorf("%d DELETEs, want 3 (bounded)", d)
			}
			if _, ok := f.sim.Namespace("a"); !ok {
				t.Error("deleted")
			}
		})
	}
}

// The last check before the delete: a Kubernetes Namespace of the same name that
// exists again (not Terminating) stops it, without calling the backend.
func TestDeleteExternalNamespaceExistsAgain(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	err := f.deleteExternal(f.spec(""), "a")
	if want := `the Kubernetes Namespace "a" exists again: not deleting its StorageOS namespace`; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, plugin.ErrNotResponsible) {
		t.Fatalf("error = %v, want %q wrapping plugin.ErrNotResponsible (the Tombstone is cancelled, also a forced one)", err, want)
	}
	if _, ok := f.sim.Namespace("a"); !ok {
		t.Fatal("deleted")
	}
	for _, op := range []string{storageossim.OpLogin, storageossim.OpListNamespaces, storageossim.OpDeleteNamespace} {
		if n := f.sim.Calls(op); n != 0 {
			t.Errorf("%d %s calls, want 0", n, op)
		}
	}
	// Terminating again: the delete goes ahead.
	f.terminate("a")
	if err := f.deleteExternal(f.spec(""), "a"); err != nil {
		t.Fatalf("DeleteExternal with the Namespace Terminating: %v", err)
	}
}

// A Kubernetes Namespace that cannot be read is not taken for gone: the delete
// fails (retried), without calling the backend.
func TestDeleteExternalNamespaceUnreadable(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	f.k8s = interceptor.NewClient(f.k8s, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Namespace); ok {
				return apierrors.NewServiceUnavailable("etcd is slow")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	err := f.deleteExternal(f.spec(""), "a")
	if want := `check Kubernetes Namespace "a"`; err == nil || !strings.HasPrefix(err.Error(), want) || errors.Is(err, plugin.ErrNotResponsible) {
		t.Fatalf("error = %v, want %q, not wrapping plugin.ErrNotResponsible", err, want)
	}
	if _, ok := f.sim.Namespace("a"); !ok {
		t.Fatal("deleted")
	}
	if n := f.sim.Calls(storageossim.OpDeleteNamespace); n != 0 {
		t.Errorf("%d %s calls, want 0", n, storageossim.OpDeleteNamespace)
	}
}

// exclude means never touched, even by a Tombstone that was created before the
// name was excluded (or `kubectl delete tombstone` of it): DeleteExternal, which
// reads the current spec, refuses.
func TestDeleteExternalRefusesExcluded(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "a")
	f.sim.AddNamespace("keep")
	for _, tc := range []struct {
		name string
		spec []byte
	}{
		{"default", f.spec("")},                // excluded by default
		{"keep", f.spec(`"exclude":["keep"]`)}, // excluded by the spec
	} {
		if err := f.deleteExternal(tc.spec, tc.name); !errors.Is(err, plugin.ErrNotResponsible) {
			t.Errorf("DeleteExternal of excluded %q: error %v, want one wrapping plugin.ErrNotResponsible (the Tombstone is cancelled, also a forced one)", tc.name, err)
		}
		if _, ok := f.sim.Namespace(tc.name); !ok {
			t.Errorf("excluded backend namespace %q was deleted", tc.name)
		}
	}
}

func TestDeleteExternalOutage(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default")
	f.sim.AddNamespace("a")
	f.sim.SetOutage(true)
	err := f.deleteExternal(f.spec(""), "a")
	var apiErr *storageos.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("error = %v, want the API's 503", err)
	}
	f.sim.SetOutage(false)
	if _, ok := f.sim.Namespace("a"); !ok {
		t.Fatal("deleted during an outage")
	}
}

// removeBackendNamespace deletes a backend namespace behind the plugin's back,
// through the simulator's own API.
func removeBackendNamespace(t *testing.T, sim *storageossim.Server, name string) {
	t.Helper()
	ns, ok := sim.Namespace(name)
	if !ok {
		t.Fatalf("no backend namespace %q", name)
	}
	login := httptest.NewRecorder()
	sim.ServeHTTP(login, httptest.NewRequest(http.MethodPost, "/v2/auth/login", strings.NewReader(`{"username":"admin","password":"s3cret"}`)))
	if login.Code != http.StatusOK {
		t.Fatalf("login: %d %s", login.Code, login.Body)
	}
	req := httptest.NewRequest(http.MethodDelete, "/v2/namespaces/"+ns.ID+"?version="+url.QueryEscape(ns.Version), nil)
	req.Header.Set("Authorization", login.Header().Get("Authorization"))
	rec := httptest.NewRecorder()
	sim.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("delete %s: %d %s", name, rec.Code, rec.Body)
	}
}

// Plan on a world that does not change gives the same result every time, item
// order, message and poll included: a Bundle's re-pass over it writes nothing.
// The world mixes every judgement: desired, excluded, orphaned by a deletion,
// by a Terminating Namespace and by a GC run, and left unjudged.
func TestPlanOfAnUnchangedWorldIsIdentical(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
	}{
		{name: "GC off", extra: noGC},
		{name: "after a GC run", extra: `"gcInterval":"1h","gcDelay":"0s","exclude":["default","keep"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, namespacegc.Options{}, "default", "a", "gone", "going")
			for _, name := range []string{"a", "gone", "going", "keep", "stray", "b", "c"} {
				f.sim.AddNamespace(name)
			}
			spec := f.spec(tc.extra)
			f.mustPlan(spec, t0) // sees the Namespaces, and runs the GC if due
			f.deleteNamespace("gone")
			f.terminate("going")
			at := t0.Add(time.Second)
			first := f.mustPlan(spec, at)
			if len(orphans(t, first)) < 2 {
				t.Fatalf("the world has orphans %q; want those of the deletion and the termination at least", orphans(t, first))
			}
			for i := range 20 {
				if again := f.mustPlan(spec, at); !reflect.DeepEqual(again, first) {
					t.Fatalf("plan %d of the same world differs:\n%+v\n%+v", i+2, first, again)
				}
			}
		})
	}
}

// emptyListings answers every namespace listing with an empty array, as a
// proxy or a StorageOS restarting may, while the namespaces stay.
func emptyListings(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/v2/namespaces" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "[]")
	return true
}

// A listing with no namespace at all — StorageOS always has its default one —
// is no proof that the namespace is gone, and neither is a 404 from the same
// front: the namespace read by its id gives the version to delete it with. The
// namespace was reported deleted (a Deleted event, the Tombstone ended) while
// StorageOS still held it: first on the empty listing alone, then on a 404 to
// a DELETE sent without the version the API requires.
func TestDeleteExternalEmptyListing(t *testing.T) {
	t.Run("the namespace is there: deleted", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		f.sim.AddNamespace("a")
		f.answerWith(emptyListings)
		if err := f.deleteExternal(f.spec(""), "a"); err != nil {
			t.Fatalf("DeleteExternal = %v, want nil", err)
		}
		if _, ok := f.sim.Namespace("a"); ok {
			t.Error("backend namespace a still exists")
		}
	})
	t.Run("the namespace holds volumes: an error", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		f.sim.AddNamespace("a")
		if err := f.sim.SetVolumes("a", 1); err != nil {
			t.Fatal(err)
		}
		f.answerWith(emptyListings)
		if err := f.deleteExternal(f.spec(""), "a"); !errors.Is(err, storageos.ErrNamespaceNotEmpty) {
			t.Fatalf("DeleteExternal = %v, want storageos.ErrNamespaceNotEmpty", err)
		}
		if _, ok := f.sim.Namespace("a"); !ok {
			t.Error("a namespace with volumes was deleted")
		}
	})
	t.Run("the front answers 404 for the namespace too: an error, the namespace kept", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		f.sim.AddNamespace("a")
		f.answerWith(emptyListingsAnd404)
		err := f.deleteExternal(f.spec(""), "a")
		if err == nil || !errors.Is(err, storageos.ErrNotFound) {
			t.Fatalf("DeleteExternal = %v, want an error wrapping storageos.ErrNotFound", err)
		}
		if _, ok := f.sim.Namespace("a"); !ok {
			t.Error("backend namespace a is gone")
		}
	})
	t.Run("no namespace at all: an error", func(t *testing.T) {
		f := newFixture(t, namespacegc.Options{}, "default")
		removeBackendNamespace(t, f.sim, "default")
		before := f.sim.Calls(storageossim.OpDeleteNamespace)
		err := f.deleteItem(f.spec(""), limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: "5f2b8a4e-0000-4000-8000-000000000000", Name: "gone"})
		if !errors.Is(err, storageos.ErrNotFound) {
			t.Fatalf("DeleteExternal = %v, want an error wrapping storageos.ErrNotFound", err)
		}
		if n := f.sim.Calls(storageossim.OpDeleteNamespace) - before; n != 0 {
			t.Errorf("%d DELETE calls, want none", n)
		}
	})
}

// emptyListingsAnd404 is emptyListings, and 404 in StorageOS's words to every
// request for one namespace, as a front that is not this StorageOS may answer.
func emptyListingsAnd404(w http.ResponseWriter, r *http.Request) bool {
	if emptyListings(w, r) {
		return true
	}
	if !strings.HasPrefix(r.URL.Path, "/v2/namespaces/") {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, `{"error":"not found"}`)
	return true
}

// A plan that lists no StorageOS namespace at all forgets no Kubernetes
// Namespace it saw deleted: once the namespace is listed again, it is an orphan.
// It was forgotten, and found again only by the next garbage collection (with
// gcInterval 0s, never).
func TestPlanEmptyListingForgetsNoDeletion(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "default", "a")
	f.sim.AddNamespace("a")
	spec := f.spec(noGC)
	f.mustPlan(spec, t0)
	f.deleteNamespace("a")
	f.answerWith(emptyListings)
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(time.Second))), map[string]bool{})
	f.answerWith(nil)
	expectJudged(t, f.judged(f.mustPlan(spec, t0.Add(2*time.Second))), map[string]bool{"default": true, "a": false})
}

// The plan reads the Namespaces from the cache without a copy of each: it
// reads their names and deletion marks only, and on a cluster of 5,000
// Namespaces a copy of every one cost 7 MB a plan.
func TestPlanListsNamespacesWithoutCopies(t *testing.T) {
	f := newFixture(t, namespacegc.Options{}, "team")
	copied := true
	f.k8s = interceptor.NewClient(f.k8s, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*corev1.NamespaceList); ok {
			o := &client.ListOptions{}
			o.ApplyOptions(opts)
			copied = o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy
		}
		return c.List(ctx, list, opts...)
	}})
	f.mustPlan(f.spec(""), time.Now())
	if copied {
		t.Error("the plan listed the Namespaces with a deep copy of each")
	}
}
