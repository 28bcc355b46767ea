package it

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A reconcile with nothing to change writes nothing: no apply, no status write,
// no event — and reads nothing from the API server but what a reference needs
// anew (the checks that run only when a kind or a pending entry goes must not
// run here). The test counts the controller's own requests (the test client's
// are not counted). Each pass is triggered by a change the controller watches
// but that changes nothing limbo owns: an unrelated label on a managed object.
// A control run then proves that the counting sees the controller's writes: a
// drifted object costs exactly one PATCH, to that object, in the very reconcile
// that also saw the unrelated label.
// Not parallel: it resets and reads the controller's request log.
func TestNoOpReconcileMakesZeroWrites(t *testing.T) {
	ns := env.Namespace(t)
	b := createBundle(t, ns, "noop",
		objectResource(t, "config", configMap("config", map[string]any{"mode": "safe"}, map[string]any{"team": "a"})),
		objectResource(t, "widget", widget("widget"), limbov1alpha1.Reference{Resource: "config"}),
		objectResource(t, "web", deployment("web", 0), limbov1alpha1.Reference{Resource: "config"}),
		objectResource(t, "app", configMap("app", map[string]any{"mode": "!{mode}", "url": "http://web/?mode=!{mode}"}, nil),
			limbov1alpha1.Reference{Name: "mode", Resource: "config", Path: "data.mode"},
			limbov1alpha1.Reference{Resource: "web"}, limbov1alpha1.Reference{Resource: "widget"}),
	)
	waitReady(t, b)
	quiesce(t, ns)

	managed := []struct {
		gvk  schema.GroupVersionKind
		name string
	}{{configMapGVK, "config"}, {widgetGVK, "widget"}, {deploymentGVK, "web"}, {configMapGVK, "app"}}
	for i, o := range managed {
		t.Run("label on "+o.gvk.Kind+" "+o.name, func(t *testing.T) {
			pokeForPasses(t, 1, func() { addLabel(t, o.gvk, ns, o.name, "test.limbo.dev/poke", fmt.Sprint(i)) })
			// Nor reads: but for the body of config, which app's reference
			// reads and which the label changed (its resourceVersion).
			noRequestsAfterPass(t, ns, testenv.NotPath("/api/v1/namespaces/"+ns+"/configmaps/config"))
		})
	}

	t.Run("control: one drifted object costs one PATCH", func(t *testing.T) {
		env.ResetControllerRequests()
		addLabel(t, configMapGVK, ns, "config", "test.limbo.dev/poke", "control")
		// Same informer, later event: the reconcile that corrects app has seen
		// the label on config.
		patchObject(t, configMapGVK, ns, "app", `{"data":{"mode":"drifted"}}`)
		waitObject(t, configMapGVK, ns, "app", func(u *unstructured.Unstructured) error {
			if got := stringField(u, "data", "mode"); got != "safe" {
				return fmt.Errorf("app data.mode = %q, want safe restored", got)
			}
			return nil
		})
		want := "PATCH /api/v1/namespaces/" + ns + "/configmaps/app"
		// Nothing more follows: the correction is not repeated, nothing else moves.
		testenv.Consistently(t, 2*time.Second, func() error {
			writes := env.ControllerRequests(testenv.Writes, testenv.InNamespace(ns), testenv.NotResource("events"))
			if len(writes) != 1 || writes[0].String() != want {
				return fmt.Errorf("writes = %s, want exactly one: %s", testenv.FormatRequests(writes), want)
			}
			return nil
		})
	})
}

// Values the API server normalizes or that never appear in the live object must
// not make every reconcile re-apply: a CPU quantity of 0.5 is stored as 500m, a
// container port gets its default protocol, a Secret's stringData is stored as
// data.
// Not parallel: it resets and reads the controller's request log.
func TestNoOpReconcileWithServerNormalizedValues(t *testing.T) {
	withContainer := func(change func(c map[string]any)) map[string]any {
		web := deployment("web", 0)
		change(web["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any))
		return web
	}
	cases := []struct {
		name string
		gvk  schema.GroupVersionKind
		obj  map[string]any
	}{
		{"defaulted fields", deploymentGVK, withContainer(func(c map[string]any) {
			c["ports"] = []any{map[string]any{"containerPort": int64(8080)}}
		})},
		{"canonicalized quantity", deploymentGVK, withContainer(func(c map[string]any) {
			c["resources"] = map[string]any{"requests": map[string]any{"cpu": "0.5"}}
		})},
		{"Secret stringData", schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "web"},
			"stringData": map[string]any{"password": "example"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			b := createBundle(t, ns, "normalized", objectResource(t, "web", tc.obj))
			waitReady(t, b)
			quiesce(t, ns)

			pokeForPasses(t, 1, func() { addLabel(t, tc.gvk, ns, "web", "test.limbo.dev/poke", "1") })
			noRequestsAfterPass(t, ns)
		})
	}
}

// quiesce waits until the controller has written nothing in ns for a while: the
// events and status writes of the Bundle's creation are behind us.
func quiesce(t testing.TB, ns string) {
	t.Helper()
	awaitQuiet(t, func() []testenv.Request { return env.ControllerRequests(testenv.Writes, testenv.InNamespace(ns)) })
}

// awaitQuiet waits until writes, the controller's writes that matter since the
// request log's last reset, stay none for a while. It resets the log.
func awaitQuiet(t testing.TB, writes func() []testenv.Request) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() error {
		env.ResetControllerRequests()
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if w := writes(); len(w) > 0 {
				return fmt.Errorf("the controller is still writing:%s", testenv.FormatRequests(w))
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
}

// pokeForPasses resets the controller's request log, calls poke — changes the
// controller watches that trigger a pass of each of n Bundles — and waits until
// the Bundle controller has finished n more reconciles. They are those
// Bundles' when no other Bundle is busy; at worst some are another's, which
// only weakens the wait, not what the caller asserts of the requests next.
func pokeForPasses(t testing.TB, n int, poke func()) {
	t.Helper()
	env.ResetControllerRequests()
	before := reconciles(t)
	poke()
	testenv.Eventually(t, 10*time.Second, func() error {
		if done := reconciles(t) - before; done < float64(n) {
			return fmt.Errorf("%v reconciles since the poke, want %d", done, n)
		}
		return nil
	})
}

// noRequestsAfterPass checks, for a while after pokeForPasses, that the
// controller sends no write and no read that keep passes in ns: a pass with
// nothing to change reads everything from its cache.
func noRequestsAfterPass(t testing.TB, ns string, keep ...func(testenv.Request) bool) {
	t.Helper()
	testenv.Consistently(t, 2*time.Second, func() error {
		if writes := env.ControllerRequests(testenv.Writes, testenv.InNamespace(ns)); len(writes) > 0 {
			return fmt.Errorf("a no-op reconcile wrote:%s", testenv.FormatRequests(writes))
		}
		if reads := env.ControllerRequests(append([]func(testenv.Request) bool{testenv.Reads, testenv.InNamespace(ns)}, keep...)...); len(reads) > 0 {
			return fmt.Errorf("a no-op reconcile read:%s", testenv.FormatRequests(reads))
		}
		return nil
	})
}

// addLabel labels an object as the test client: a change limbo watches, to a
// field limbo does not own.
func addLabel(t testing.TB, gvk schema.GroupVersionKind, ns, name, key, value string) {
	t.Helper()
	patchObject(t, gvk, ns, name, fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value))
}

// reconciles is how many reconciles the Bundle controller has finished.
func reconciles(t testing.TB) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	found := false
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		found = true
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "bundle" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	if !found {
		t.Fatal("no controller_runtime_reconcile_total metric: is the controller in-process?")
	}
	return n
}
