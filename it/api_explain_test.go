package it

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
)

// `kubectl explain` documents limbo's API down to the fields of status, from the
// descriptions the API server publishes for the CRDs.
func TestKubectlExplain(t *testing.T) {
	t.Parallel()
	for field, want := range map[string]string{
		"bundle.status.pendingDeletions.deleteAfter": "DeletionTimestamp plus the deletion delay",
		"bundle.status.resources.object.uid":         "tells this object from a later one",
		"tombstone.status.lastError":                 "last failed external delete",
	} {
		t.Run(field, func(t *testing.T) {
			// The API server publishes a CRD's OpenAPI a moment after the CRD is
			// established.
			testenv.Eventually(t, time.Minute, func() error {
				out, err := kubectl(t, "explain", field)
				if err != nil {
					return fmt.Errorf("kubectl explain %s: %v\n%s", field, err, out)
				}
				if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
					return fmt.Errorf("kubectl explain %s does not say %q:\n%s", field, want, out)
				}
				return nil
			})
		})
	}
}
