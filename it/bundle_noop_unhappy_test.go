package it

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/it/testplugin"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/readiness"
)

// steadyState is a Bundle that is not Ready and stays so: a pass of it has
// nothing to change, as one of a Ready Bundle has not.
type steadyState struct {
	name string
	// resources are added to the anchor's Bundle once it is Ready: the anchor,
	// a ConfigMap the Bundle manages whatever its other resources do (a spec
	// error touches nothing), is what a pass can be triggered by.
	resources func(t testing.TB, ns string) []limbov1alpha1.Resource
	// prepare makes what the state needs before the resources are added, and
	// returns the Bundle if it created it Ready (nil: the anchor's is created).
	prepare func(t testing.TB, ns string) *limbov1alpha1.Bundle
	// reached accepts the Bundle once it is in the state.
	reached func(*limbov1alpha1.Bundle) error
	// poke is the managed object whose label triggers the re-pass (zero: the
	// anchor).
	poke objectKey
	// retried is the one write a re-pass of the state is meant to make, as
	// method and path in the namespace (zero: none); the state says why.
	retried testenv.Request
	// read, when set, is the one read (GET) of the namespace's objects a
	// re-pass of the state is meant to make, as retried is given (zero: its
	// reads are not checked).
	read testenv.Request
}

// A pass of a Bundle that is not Ready, and that nothing has changed since the
// last pass, writes nothing either — no apply, no status write, no event —
// as TestNoOpReconcileMakesZeroWrites asserts of a Ready one. A message that
// differs between passes while nothing changed (the errors of an invalid
// plugin spec listed in map order) rewrites the status and emits an event at
// every pass, for good: the Bundles that are not Ready are the ones passed
// again and again (retries, rechecks, every event of what they wait for).
//
// The states are reached in parallel, each Bundle in its namespace; then every
// Bundle is passed again at once (an unrelated label on an object it manages)
// and each namespace is watched for the controller's writes.
// Not parallel: it resets and reads the controller's request log.
func TestNoOpRePassOfUnreadyBundleMakesZeroWrites(t *testing.T) {
	anchor := func(t testing.TB) limbov1alpha1.Resource {
		return objectResource(t, "anchor", configMap("anchor", map[string]any{"k": "v"}, nil))
	}
	states := []steadyState{
		{
			name: "Stalled: dependency cycle and missing dependency",
			resources: func(t testing.TB, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					objectResource(t, "a", configMap("a", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "b"}),
					objectResource(t, "b", configMap("b", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "a"}),
					objectResource(t, "c", configMap("c", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "nowhere"}),
				}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return conditionIs(b, "Stalled", metav1.ConditionTrue, limbov1alpha1.ReasonInvalidSpec)
			},
		},
		{
			name: "Stalled: plugin spec with several schema errors",
			resources: func(_ testing.TB, _ string) []limbov1alpha1.Resource {
				// Fields the schema forbids among them: the schema validator
				// finds those by walking a map (sorted since 7d1cf68). Without
				// them this row passes on the code before that fix too.
				return []limbov1alpha1.Resource{{Name: "gc", Plugin: &limbov1alpha1.PluginResource{Name: namespacegc.Name, Spec: &apiextensionsv1.JSON{
					Raw: []byte(`{"storageos":{"endpoint":1,"credentialsSecretRef":{}},"gcInterval":"soon","exclude":"default","zeta":1,"alpha":2,"mu":3}`)}}}}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "gc", limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalidPluginSpec)
			},
		},
		{
			// Every pass (and every retry of the backoff) tries the apply
			// again, which is meant: only the API server can tell whether it
			// still refuses it (an admission policy or a CRD's schema may have
			// changed), and a refused apply stores nothing. The message shown
			// must not change with the order of the causes the API server
			// found (sortedCauses).
			name: "Stalled: template refused as Invalid with several causes",
			resources: func(t testing.TB, _ string) []limbov1alpha1.Resource {
				// Keys no ConfigMap may have (label values would do, but the
				// Bundle's admission refuses those already).
				keys := map[string]any{"first key!": "v", "second key?": "v", "third key#": "v"}
				return []limbov1alpha1.Resource{objectResource(t, "refused", configMap("refused", keys, nil))}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "refused", limbov1alpha1.ResourceError, limbov1alpha1.ReasonInvalid)
			},
			retried: testenv.Request{Method: "PATCH", Path: "configmaps/refused"},
		},
		{
			name: "Blocked: dependency never Ready",
			resources: func(t testing.TB, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{
					// A Gadget is Ready once its status.phase is Running: no
					// operator ever writes it here.
					objectResource(t, "dependency", gadget("dependency")),
					objectResource(t, "waiter", configMap("waiter", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "dependency"}),
				}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "waiter", limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady)
			},
			poke: objectKey{gadgetGVK, "", "dependency"},
		},
		{
			name: "plugin call fails every time: test plugin",
			prepare: func(_ testing.TB, ns string) *limbov1alpha1.Bundle {
				domain := external.Domain(ns)
				domain.Set("item", true)
				domain.FailPlan(testplugin.ErrInjected)
				return nil
			},
			resources: func(_ testing.TB, ns string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{pluginResource("items", ns, "1h")}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "items", limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed)
			},
		},
		{
			// A real plugin's failure: its error's text is the backend's.
			name: "plugin call fails every time: namespace-gc backend unreachable",
			prepare: func(t testing.TB, ns string) *limbov1alpha1.Bundle {
				createObject(t, ns, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": nsgcSecret},
					"stringData": map[string]any{"username": "storageos", "password": "storageos"}})
				return nil
			},
			resources: func(testing.TB, string) []limbov1alpha1.Resource {
				// Port 1 of the loopback: nothing listens, every call is refused.
				return []limbov1alpha1.Resource{(&nsgcFixture{url: "http://127.0.0.1:1"}).resource("1h")}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, nsgcResource, limbov1alpha1.ResourceError, limbov1alpha1.ReasonPluginFailed)
			},
		},
		{
			name: "object in limbo counting down",
			prepare: func(t testing.TB, ns string) *limbov1alpha1.Bundle {
				// Ready with the orphan-to-be first, as a Bundle whose object
				// then left its spec.
				b := createBundle(t, ns, "state", anchor(t),
					objectResource(t, "leaving", configMap("leaving", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})))
				return waitReady(t, b)
			},
			resources: func(testing.TB, string) []limbov1alpha1.Resource { return nil },
			reached: func(b *limbov1alpha1.Bundle) error {
				if len(b.Status.PendingDeletions) != 1 || b.Status.PendingDeletions[0].DeleteAfter == nil {
					return fmt.Errorf("pendingDeletions = %+v, want ConfigMap leaving counting down", b.Status.PendingDeletions)
				}
				return conditionIs(b, "Ready", metav1.ConditionTrue, "")
			},
			poke: objectKey{configMapGVK, "", "leaving"},
		},
		{
			name: "NotOwned: an object of the name limbo does not manage",
			prepare: func(t testing.TB, ns string) *limbov1alpha1.Bundle {
				createObject(t, ns, configMap("taken", map[string]any{"k": "someone else's"}, nil))
				return nil
			},
			resources: func(t testing.TB, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "taken", configMap("taken", map[string]any{"k": "v"}, nil))}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "taken", limbov1alpha1.ResourceError, limbov1alpha1.ReasonNotOwned)
			},
		},
		{
			// The generator's status says InProgress (its last object that is
			// not Ready decides), not NotOwned: the object in the way is still
			// read, not found again by the create-only apply.
			name: "generator: an object in the way, then one not Ready",
			prepare: func(t testing.TB, ns string) *limbov1alpha1.Bundle {
				createObject(t, ns, configMap("gen-taken", map[string]any{"k": "someone else's"}, nil))
				external.Domain(ns).Generate(generated(configMap("gen-taken", map[string]any{"k": "v"}, nil)), generated(gadget("gen-waiting")))
				return nil
			},
			resources: func(_ testing.TB, ns string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{pluginResource("gen", ns, "1h")}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				// The Gadget's reason: the pass got past the ConfigMap before it.
				return resourceIs(b, "gen", limbov1alpha1.ResourceInProgress, readiness.ReasonFieldNotSet)
			},
			read: testenv.Request{Method: "GET", Path: "configmaps/gen-taken"},
		},
		{
			// The generator's status says NotOwned: of its objects, only the
			// one in the way is read; the one the API server refuses to create
			// (retried at every pass, as a template's) is not read first.
			name: "generator: an object refused, then one in the way",
			prepare: func(t testing.TB, ns string) *limbov1alpha1.Bundle {
				createObject(t, ns, configMap("gen-taken", map[string]any{"k": "someone else's"}, nil))
				external.Domain(ns).Generate(generated(configMap("gen-refused", map[string]any{"no key!": "v"}, nil)),
					generated(configMap("gen-taken", map[string]any{"k": "v"}, nil)))
				return nil
			},
			resources: func(_ testing.TB, ns string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{pluginResource("gen", ns, "1h")}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "gen", limbov1alpha1.ResourceError, limbov1alpha1.ReasonNotOwned)
			},
			retried: testenv.Request{Method: "PATCH", Path: "configmaps/gen-refused"},
			read:    testenv.Request{Method: "GET", Path: "configmaps/gen-taken"},
		},
		{
			name: "ControlledByOther: an object another controller owns",
			prepare: func(t testing.TB, ns string) *limbov1alpha1.Bundle {
				owner := createObject(t, ns, configMap("owner", map[string]any{"k": "v"}, nil))
				owned := configMap("owned", map[string]any{"k": "v"}, nil)
				owned["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(owner.GetUID()), "controller": true}}
				createObject(t, ns, owned)
				return nil
			},
			resources: func(t testing.TB, _ string) []limbov1alpha1.Resource {
				return []limbov1alpha1.Resource{objectResource(t, "owned", configMap("owned", map[string]any{"k": "v"}, nil))}
			},
			reached: func(b *limbov1alpha1.Bundle) error {
				return resourceIs(b, "owned", limbov1alpha1.ResourceError, limbov1alpha1.ReasonControlledByOther)
			},
		},
	}

	namespaces := make([]string, len(states))
	for i := range states {
		namespaces[i] = env.Namespace(t) // the parent's: they outlive the groups below
	}
	t.Run("reach", func(t *testing.T) {
		for i, st := range states {
			t.Run(st.name, func(t *testing.T) {
				t.Parallel()
				ns := namespaces[i]
				var b *limbov1alpha1.Bundle
				if st.prepare != nil {
					b = st.prepare(t, ns)
				}
				if b == nil {
					b = waitReady(t, createBundle(t, ns, "state", anchor(t)))
				}
				updateBundle(t, b, append([]limbov1alpha1.Resource{anchor(t)}, st.resources(t, ns)...)...)
				waitBundle(t, b, st.reached)
			})
		}
	})
	if t.Failed() {
		return
	}

	// except keeps the requests other than meant, a request of state i's
	// (retried, read) as the state gives it, its path in the namespace.
	except := func(i int, meant testenv.Request) func(testenv.Request) bool {
		path := "/api/v1/namespaces/" + namespaces[i] + "/" + meant.Path
		return func(r testenv.Request) bool { return r.Method != meant.Method || r.Path != path }
	}
	unexpected := func(i int) []testenv.Request {
		return env.ControllerRequests(testenv.Writes, testenv.InNamespace(namespaces[i]), except(i, states[i].retried))
	}
	unexpectedReads := func(i int) []testenv.Request {
		if states[i].read == (testenv.Request{}) {
			return nil
		}
		return env.ControllerRequests(testenv.Reads, testenv.InNamespace(namespaces[i]), except(i, states[i].read))
	}
	awaitQuiet(t, func() []testenv.Request {
		var all []testenv.Request
		for i := range states {
			all = append(all, unexpected(i)...)
		}
		return all
	})
	pokeForPasses(t, len(states), func() {
		for i, st := range states {
			target := st.poke
			if target.gvk.Kind == "" {
				target = objectKey{configMapGVK, "", "anchor"}
			}
			addLabel(t, target.gvk, namespaces[i], target.name, "test.limbo.dev/poke", "1")
		}
	})
	t.Run("re-pass", func(t *testing.T) {
		for i, st := range states {
			t.Run(st.name, func(t *testing.T) {
				t.Parallel()
				testenv.Consistently(t, 2*time.Second, func() error {
					if writes := unexpected(i); len(writes) > 0 {
						return fmt.Errorf("a re-pass with nothing to change wrote:%s", testenv.FormatRequests(writes))
					}
					if reads := unexpectedReads(i); len(reads) > 0 {
						return fmt.Errorf("a re-pass with nothing to change read:%s", testenv.FormatRequests(reads))
					}
					return nil
				})
				if err := st.reached(getBundle(t, &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[i], Name: "state"}})); err != nil {
					t.Errorf("the Bundle left its state: %v", err)
				}
			})
		}
	})
}

// generated is obj (unstructured content) as the test plugin generates it.
func generated(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}
