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
	t.Parallel()
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
			t.Parallel()
			f := newNSGCFixture(t)
			legacy := f.strayNamespace("nsgc-legacy-") // excluded by the second case
			stray := f.strayNamespace("nsgc-stray-")
			fields := []string{`"gcDelay":"0s"`, `"gcInterval":"1s"`}
			for _, e := range tc.exclude {
				fields = append(fields, fmt.Sprintf(e, legacy))
			}
			waitReady(t, f.bundle(t, "0s", fields...))
			// The GC runs (every second) and deletes what it may...
			f.waitBackendGone(t, stray)
			keep := tc.keep(legacy)
			if len(keep) == 1 {
				f.waitBackendGone(t, legacy)
			}
			// ...and never what it may not.
			deletes := f.deletes()
			testenv.Consistently(t, 5*time.Second, func() error {
				for _, name := range keep {
					if !f.backendHas(name) {
						return fmt.Errorf("backend namespace %s was deleted", name)
					}
					if ts := f.tombstone(t, name); ts != nil {
						return fmt.Errorf("Tombstone %s for %s", ts.Name, name)
					}
				}
				if n := f.deletes(); n != deletes {
					return fmt.Errorf("%d DELETE calls since, want none", n-deletes)
				}
				return nil
			})
		})
	}
}
