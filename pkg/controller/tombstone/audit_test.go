package tombstone

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// An external item's deletion is a line of the audit trail, as an object's is
// (DESIGN §6: every deletion is logged with the Bundle, resource, object and
// deadline): one "deleted" line, with the Bundle, the resource, the item and the
// deadline the countdown ended at.
func TestExternalDeletionIsAudited(t *testing.T) {
	h := newHarness(t, 0)
	var mu sync.Mutex
	var lines []string
	ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{}))
	reconcile := func() {
		t.Helper()
		if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: h.key}); err != nil {
			t.Fatal(err)
		}
	}
	reconcile() // the countdown
	h.clock.Step(2 * time.Minute)
	reconcile()
	if h.plugin.calls.Load() != 1 || h.tombstone() != nil {
		t.Fatalf("the item deleted %d times, the Tombstone %v; want one delete, the Tombstone gone", h.plugin.calls.Load(), h.tombstone())
	}
	mu.Lock()
	defer mu.Unlock()
	var deleted []string
	for _, l := range lines {
		if strings.Contains(l, `"msg"="deleted"`) {
			deleted = append(deleted, l)
		}
	}
	want := `"msg"="deleted" "bundle"="team/shop" "object"="Thing 42" "uid"="tombstone-uid" "resource"="items" "deadline"="2026-03-14T12:01:00Z"`
	if len(deleted) != 1 || !strings.Contains(deleted[0], want) {
		t.Errorf("audit lines %q, want one containing %s", deleted, want)
	}
}
