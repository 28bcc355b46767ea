package it

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
)

// A restarted controller applies only the objects that need it: one that
// drifted while it was down, one whose template changed. Before, it had no
// memory of what it applied (applied.go) and applied every object again — a
// no-op for the API server, but one request per object at the client's rate:
// 10,000 PATCHes and 200 s at QPS 50 after every rollout of a controller of
// 1,000 Bundles (make bench -shards 2, session 36), while changes waited. The
// status now records, per object, what limbo last found applied and at which
// resourceVersion (status.resources[].appliedDigest); a generator's entry
// records its objects' digests together, so that one of its objects drifted is
// the only one of them applied. Not parallel: it restarts the shared
// controller and reads its request log.
func TestRestartAppliesOnlyWhatChanged(t *testing.T) {
	ns := env.Namespace(t)
	kept := configMapResources(t, "kept", 3, nil)
	drifted := objectResource(t, "drifted", configMap("drifted", map[string]any{"mode": "safe"}, nil))
	external.Domain(ns).Generate(generated(configMap("gen-0", map[string]any{"mode": "safe"}, nil)),
		generated(configMap("gen-1", map[string]any{"mode": "safe"}, nil)), generated(configMap("gen-2", map[string]any{"mode": "safe"}, nil)))
	gen := pluginResource("gen", ns, "")
	b := createBundle(t, ns, "restart-applies", append(kept, drifted, gen,
		objectResource(t, "changed", configMap("changed", map[string]any{"mode": "old"}, nil)))...)
	waitReady(t, b)
	quiesce(t, ns)

	changed := objectResource(t, "changed", configMap("changed", map[string]any{"mode": "new"}, nil))
	if err := env.RestartController(func() {
		patchObject(t, configMapGVK, ns, "drifted", `{"data":{"mode":"drifted"}}`)
		patchObject(t, configMapGVK, ns, "gen-1", `{"data":{"mode":"drifted"}}`)
		updateBundle(t, b, append(kept, drifted, gen, changed)...)
		env.ResetControllerRequests() // from here on, the restarted controller's requests alone
	}); err != nil {
		t.Fatalf("restart the controller: %v", err)
	}
	for name, mode := range map[string]string{"drifted": "safe", "changed": "new", "gen-1": "safe"} {
		waitObject(t, configMapGVK, ns, name, func(u *unstructured.Unstructured) error {
			if got := stringField(u, "data", "mode"); got != mode {
				return fmt.Errorf("%s data.mode = %q, want %q", name, got, mode)
			}
			return nil
		})
	}
	waitReady(t, b)
	want := []string{
		"PATCH /api/v1/namespaces/" + ns + "/configmaps/changed",
		"PATCH /api/v1/namespaces/" + ns + "/configmaps/drifted",
		"PATCH /api/v1/namespaces/" + ns + "/configmaps/gen-1",
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		writes := env.ControllerRequests(testenv.Writes, testenv.InNamespace(ns), func(r testenv.Request) bool { return r.Resource() == "configmaps" })
		got := make([]string, 0, len(writes))
		for _, w := range writes {
			got = append(got, w.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("the restarted controller wrote the Bundle's objects:%s\nwant exactly %q", testenv.FormatRequests(writes), want)
		}
		return nil
	})
}
