package softdelete

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A stamp written by hand with a fraction of a second ("…T11:00:00.9Z") is
// listed in status.pendingDeletions in whole seconds, as the API server stores
// it: with the fraction, every pass found the status it wanted unlike the one
// stored and sent a status patch that changed nothing.
func TestPendingEntryStampInWholeSeconds(t *testing.T) {
	stamp := time.Date(2026, 3, 14, 11, 0, 0, 900_000_000, time.UTC)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetName("cfg")
	entry := pendingEntry(obj, Decision{Stamp: stamp, Deadline: stamp.Add(time.Hour)}, nil)
	if want := stamp.Truncate(time.Second); !entry.DeletionTimestamp.Time.Equal(want) || entry.DeletionTimestamp.Nanosecond() != 0 {
		t.Errorf("deletionTimestamp = %v, want %v", entry.DeletionTimestamp.Time, want)
	}
}
