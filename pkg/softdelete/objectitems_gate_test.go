package softdelete_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A gate that cannot tell whether a group may go holds the group's due items:
// a failed read of what holds a node is never a yes.
func TestProcessItemsGateFailureHolds(t *testing.T) {
	h := newHarness(t, cm("n1-drive", stamped("2025-03-14T12:00:00Z"), nil))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "n1-drive", false, "n1", 0)},
		MayDelete: func(context.Context, string) (string, error) {
			return "", errors.New("list the pods of n1: 503 Service Unavailable")
		}})
	if len(h.calls) != 0 {
		t.Errorf("API calls %q, want none", h.calls)
	}
	if got := messages(out.Pending)["n1-drive"]; got != "due; held: cannot tell whether it may be deleted: list the pods of n1: 503 Service Unavailable" {
		t.Errorf("pending message %q", got)
	}
	if out.Err == nil {
		t.Error("no error: the gate's failure would not be retried")
	}
}

// An item whose only finalizers are listed to clear, not terminating: they are
// cleared, then it is deleted in the same pass.
func TestProcessItemsClearedThenDeleted(t *testing.T) {
	h := newHarness(t, withFinalizers(cm("drive", stamped("2025-03-14T12:00:00Z"), nil), "drive-cleanup"))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0, "drive-cleanup")}})
	want := []string{
		`PATCH ConfigMap team-a/drive application/merge-patch+json {"metadata":{"finalizers":[],"resourceVersion":"999"}}`,
		"DELETE ConfigMap team-a/drive uid=uid-drive rv=1000 propagation=Background",
	}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	if h.get(t, "drive") != nil || len(out.Pending) != 0 || out.Err != nil {
		t.Errorf("drive kept: %+v", out)
	}
}

// While the Bundle is not Ready, the gate is not asked.
func TestProcessItemsHoldAsksNoGate(t *testing.T) {
	h := newHarness(t, cm("due", stamped("2025-03-14T12:00:00Z"), nil))
	h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Hold: "not ready",
		Items: []softdelete.Item{h.item(t, "due", false, "n1", 0)},
		MayDelete: func(context.Context, string) (string, error) {
			t.Error("the gate was asked while the Bundle is not Ready")
			return "", nil
		}})
}

// A failed write of the resource's delay on an item counting down is listed
// with it, as any failed write.
func TestProcessItemsDelayRefreshFailureListed(t *testing.T) {
	h := newHarness(t, cm("drive", map[string]string{delayKey: "24h", stampKey: "2025-03-14T12:30:00Z", ownerKey: owner}, nil))
	h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
		return errors.New("injected: 500 Internal Server Error")
	}})
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0)}})
	if got := messages(out.Pending)["drive"]; !strings.Contains(got, "500 Internal Server Error") || out.Err == nil {
		t.Errorf("pending message %q, err %v: want the failed write", got, out.Err)
	}
}

// Once its context is done — the caller's time for items ran out while a write
// hung (a dying cluster's admission webhook) — ProcessItems acts on no further
// item: those are listed as left for the next pass, untouched, and the caller is
// asked to come back. Without it a pass held its worker for every item's write
// timeout in turn.
func TestProcessItemsStopsWhenTheContextIsDone(t *testing.T) {
	h := newHarness(t, cm("a", nil, nil), cm("b", nil, nil), cm("c", nil, nil))
	writes := 0
	h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ client.Patch, _ ...client.PatchOption) error {
		writes++
		<-ctx.Done() // the write hangs until the caller's budget ends
		return ctx.Err()
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	out := h.engine.ProcessItems(ctx, bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "a", false, "n1", 0), h.item(t, "b", false, "n1", 0), h.item(t, "c", false, "n2", 0)}})
	if writes != 1 {
		t.Errorf("%d writes, want 1 (the one that hung)", writes)
	}
	got := messages(out.Pending)
	if len(got) != 3 || got["b"] != softdelete.MsgItemsDeferred || got["c"] != softdelete.MsgItemsDeferred {
		t.Errorf("pending = %v, want b and c left for the next pass", got)
	}
	if !out.ReadAgain || out.Err == nil {
		t.Errorf("ReadAgain %v, Err %v: want the caller back soon, and the hung write's error", out.ReadAgain, out.Err)
	}
}

// A group reached after the context is done is not put to its gate (the gate's
// answer would be an error, reported as one): its items are left for the next
// pass like the others.
func TestProcessItemsAsksNoGateOnceTheContextIsDone(t *testing.T) {
	h := newHarness(t, cm("due", stamped("2025-03-14T12:00:00Z"), nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := h.engine.ProcessItems(ctx, bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "due", false, "n1", 0)},
		MayDelete: func(context.Context, string) (string, error) {
			t.Error("the gate was asked with its context done")
			return "", nil
		}})
	if got := messages(out.Pending)["due"]; got != softdelete.MsgItemsDeferred || out.Err != nil || len(h.calls) != 0 {
		t.Errorf("pending %q, err %v, calls %q: want it left for the next pass, nothing written, no error", got, out.Err, h.calls)
	}
}
