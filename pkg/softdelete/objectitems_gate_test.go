package softdelete_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Earliest is the sooner of two wake-ups, zero meaning none.
func TestEarliest(t *testing.T) {
	soon, late := at("2025-03-14T12:31:00Z"), at("2025-03-14T13:00:00Z")
	for _, tc := range []struct {
		name       string
		a, b, want time.Time
	}{
		{name: "the later second", a: soon, b: late, want: soon},
		{name: "the later first", a: late, b: soon, want: soon},
		{name: "none yet", b: late, want: late},
		{name: "none more", a: soon, want: soon},
		{name: "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := softdelete.Earliest(tc.a, tc.b); !got.Equal(tc.want) {
				t.Errorf("Earliest(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// Items of one order go together: one that a finalizer it keeps holds, deleted
// and terminating, holds only the items of higher orders, not its peers.
func TestProcessItemsSameOrderGoesTogether(t *testing.T) {
	due := stamped("2025-03-14T12:00:00Z")
	h := newHarness(t, withFinalizers(cm("a-volume", due, nil), "kept"), cm("b-volume", due, nil))
	h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "a-volume", false, "n1", 0), h.item(t, "b-volume", false, "n1", 0)}})
	want := []string{
		"DELETE ConfigMap team-a/a-volume uid=uid-a-volume rv=999 propagation=Background",
		"DELETE ConfigMap team-a/b-volume uid=uid-b-volume rv=999 propagation=Background",
	}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
}

// A due item that cannot go yet, for a reason that ends by itself, brings the
// caller back after HoldRecheckInterval: nothing else would (no deadline is
// left, and the gate's reasons, a finalizer, are not watched).
func TestProcessItemsHeldComeBackToRecheck(t *testing.T) {
	due := stamped("2025-03-14T12:00:00Z")
	recheck := now.Add(softdelete.HoldRecheckInterval)
	for _, tc := range []struct {
		name      string
		objs      []*unstructured.Unstructured
		mayDelete func(context.Context, string) (string, error)
		deleteErr error
	}{
		{name: "the gate closed", objs: []*unstructured.Unstructured{cm("x", due, nil)},
			mayDelete: func(context.Context, string) (string, error) { return "a pod still runs on the node", nil }},
		{name: "deleted, held by a finalizer it keeps", objs: []*unstructured.Unstructured{withFinalizers(cm("x", due, nil), "kept")}},
		{name: "waiting for a lower order's item, whose delete failed", objs: []*unstructured.Unstructured{cm("a", due, nil), cm("x", due, nil)},
			deleteErr: errors.New("refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			for _, o := range tc.objs {
				objs = append(objs, o)
			}
			h := newHarness(t, objs...)
			h.deleteErr = tc.deleteErr
			var items []softdelete.Item
			for i, o := range tc.objs {
				items = append(items, h.item(t, o.GetName(), false, "n1", i))
			}
			out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: items, MayDelete: tc.mayDelete})
			if !out.WakeAt.Equal(recheck) {
				t.Errorf("WakeAt %v, want %v", out.WakeAt, recheck)
			}
		})
	}
}

// An item terminating already, whose listed finalizer is cleared while another
// is kept, is still there: listed as terminating, held by the one kept, not
// reported gone.
func TestProcessItemsClearedButStillHeld(t *testing.T) {
	terminating := withFinalizers(cm("drive", stamped("2025-03-14T12:00:00Z"), nil), "drive-cleanup", "other")
	terminating.SetDeletionTimestamp(mt(at("2025-03-14T12:20:00Z")))
	h := newHarness(t, terminating)
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0, "drive-cleanup")}})
	if got := messages(out.Pending)["drive"]; got != "being deleted; held by finalizers: other" {
		t.Errorf("pending message %q, want it listed as terminating, held by other", got)
	}
}

// The gate is asked only when an item of its group is due: a countdown that
// runs needs no answer (and a gate that fails would report a failure where
// nothing was to be deleted).
func TestProcessItemsAsksNoGateWhenNothingIsDue(t *testing.T) {
	h := newHarness(t, cm("drive", stamped("2025-03-14T12:25:00Z"), nil))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0)},
		MayDelete: func(context.Context, string) (string, error) {
			t.Error("the gate was asked with nothing due")
			return "held", nil
		}})
	if out.Err != nil || !out.WakeAt.Equal(at("2025-03-14T12:35:00Z")) {
		t.Errorf("outcome %+v, want WakeAt at the deadline", out)
	}
}

// A cancel, too, waits for the next pass once the context is done: it is a
// write, and the pass's time for writes ran out.
func TestProcessItemsCancelsNothingOnceTheContextIsDone(t *testing.T) {
	h := newHarness(t, cm("drive", stamped("2025-03-14T12:25:00Z"), map[string]string{pendingKey: "true"}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := h.engine.ProcessItems(ctx, bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "drive", true, "n1", 0)}})
	if len(h.calls) != 0 || !out.ReadAgain || out.Err != nil {
		t.Errorf("calls %q, ReadAgain %v, err %v: want nothing written and the caller back soon", h.calls, out.ReadAgain, out.Err)
	}
}
