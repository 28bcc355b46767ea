package it

import (
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The backend's "default" namespace is never touched (exclude defaults to
// [default]), nor is any namespace the spec excludes, however often the GC runs.
func TestNamespaceGCNeverTouchesDefault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exclude []string // spec fields
		keep    func(legacy string) []string
	}{
		{name: "default exclude", keep: func(string) []string { return []string{storageossim.DefaultNamespace} }},
		{name: "explicit exclude", exclude: []string{`"exclude":["default","%s"]`},
			keep: func(legacy string) []string { return []string{storageossim.DefaultNamespace, legacy} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			sim, url := startStorageOS(t)
			createStorageOSSecret(t, ns)
			legacy := uniqueName("nsgc-legacy-") // excluded by the second case, without a Kubernetes Namespace
			stray := uniqueName("nsgc-stray-")
			sim.AddNamespace(legacy)
			sim.AddNamespace(stray)
			fields := []string{`"gcDelay":"0s"`, `"gcInterval":"1s"`}
			for _, e := range tc.exclude {
				fields = append(fields, fmt.Sprintf(e, legacy))
			}
			b := createBundle(t, ns, "storage", nsgcResourceFor(url, "0s", fields...))
			waitReady(t, b)
			// The GC runs (every second) and deletes what it may...
			waitBackendGone(t, sim, ns, stray)
			keep := tc.keep(legacy)
			if len(keep) == 1 {
				waitBackendGone(t, sim, ns, legacy)
			}
			// ...and never what it may not.
			deletes := sim.Calls(storageossim.OpDeleteNamespace)
			testenv.Consistently(t, 5*time.Second, func() error {
				for _, name := range keep {
					if !backendHas(sim, name) {
						return fmt.Errorf("backend namespace %s was deleted", name)
					}
					if ts := tombstoneFor(t, ns, name); ts != nil {
						return fmt.Errorf("Tombstone %s for %s", ts.Name, name)
					}
				}
				if n := sim.Calls(storageossim.OpDeleteNamespace); n != deletes {
					return fmt.Errorf("%d DELETE calls since, want none", n-deletes)
				}
				return nil
			})
		})
	}
}
