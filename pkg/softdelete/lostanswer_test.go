package softdelete_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A delete whose answer is lost (a timeout, a cut connection) after the API
// server acted deleted the object: the engine reads it back and records a
// deletion, with its Deleted event, not a DeleteFailed followed by an object
// gone without a word. One that failed, as a read shows, stays a failure.
func TestEngineDeleteWhoseAnswerWasLost(t *testing.T) {
	due := map[string]string{delayKey: "1m", stampKey: "2025-03-14T12:00:00Z"}
	pending := map[string]string{pendingKey: "true"}
	timeout := apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
	cut := errors.New(`Delete "https://10.0.0.1:6443/api/v1/namespaces/team-a/configmaps/db": http2: client connection lost`)
	tests := []struct {
		name        string
		finalizers  []string
		deleteLost  error // the delete happened; this is what the client returned
		deleteErr   error // the delete did not happen
		readErr     bool  // the read-back fails too
		wantGone    bool
		wantErr     bool
		wantEvent   string
		wantResult  string
		wantPending string // the pending entry's message prefix; "" for none
	}{{
		name:       "deleted, the answer timed out",
		deleteLost: timeout,
		wantGone:   true,
		wantEvent:  "Normal Deleted ConfigMap team-a/db deleted (the answer to its delete was lost, " + timeout.Error() + "; a read showed it took effect)",
		wantResult: softdelete.ResultDeleted,
	}, {
		name:       "deleted, the connection cut",
		deleteLost: cut,
		wantGone:   true,
		wantEvent:  "Normal Deleted ConfigMap team-a/db deleted (the answer to its delete was lost, " + cut.Error() + "; a read showed it took effect)",
		wantResult: softdelete.ResultDeleted,
	}, {
		name:        "terminating under a finalizer, the answer timed out",
		finalizers:  []string{"example.com/backup"},
		deleteLost:  timeout,
		wantEvent:   "Normal Deleted ConfigMap team-a/db deleted (the answer to its delete was lost, " + timeout.Error() + "; a read showed it took effect)",
		wantResult:  softdelete.ResultDeleted,
		wantPending: limbov1alpha1.PendingMessageBeingDeleted,
	}, {
		name:        "not deleted: the read shows it still there",
		deleteErr:   timeout,
		wantErr:     true,
		wantEvent:   "Warning DeleteFailed ConfigMap team-a/db: delete ConfigMap team-a/db: " + timeout.Error(),
		wantResult:  softdelete.ResultFailed,
		wantPending: "delete ConfigMap team-a/db: ",
	}, {
		// Refused, the delete did not happen: the object gone meanwhile went by
		// another hand, and the refusal stays a failure, no read asked.
		name:        "refused, and gone meanwhile by another hand",
		deleteLost:  apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "db", errors.New("denied by policy")),
		wantErr:     true,
		wantEvent:   `Warning DeleteFailed ConfigMap team-a/db: delete ConfigMap team-a/db: configmaps "db" is forbidden: denied by policy`,
		wantResult:  softdelete.ResultFailed,
		wantPending: "delete ConfigMap team-a/db: ",
	}, {
		name:        "deleted, but the read-back fails too: a failure as far as anyone knows",
		deleteLost:  cut,
		readErr:     true,
		wantErr:     true,
		wantEvent:   "Warning DeleteFailed ConfigMap team-a/db: delete ConfigMap team-a/db: " + cut.Error(),
		wantResult:  softdelete.ResultFailed,
		wantPending: "delete ConfigMap team-a/db: ",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := cm("db", due, pending)
			obj.SetFinalizers(tc.finalizers)
			h := newHarness(t, obj)
			stale := h.live(t, "db")
			h.deleteLost, h.deleteErr = tc.deleteLost, tc.deleteErr
			if tc.readErr {
				// The fresh read before the delete succeeds; the read-back after it fails.
				reads := 0
				h.engine.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if reads++; reads > 1 {
						return apierrors.NewServiceUnavailable("etcd leader changed")
					}
					return c.Get(ctx, key, obj, opts...)
				}})
			}
			out := h.engine.Orphan(context.Background(), bundle(), stale, nil)
			if out.Gone != tc.wantGone || (out.Err != nil) != tc.wantErr {
				t.Errorf("outcome %+v: want gone %v, error %v", out, tc.wantGone, tc.wantErr)
			}
			switch {
			case tc.wantPending == "" && out.Pending != nil:
				t.Errorf("pending %+v, want none", out.Pending)
			case tc.wantPending != "" && (out.Pending == nil || !strings.HasPrefix(out.Pending.Message, tc.wantPending)):
				t.Errorf("pending %+v, want a message starting %q", out.Pending, tc.wantPending)
			}
			if events := h.events(); !slices.Contains(events, tc.wantEvent) {
				t.Errorf("events %q, want %q", events, tc.wantEvent)
			}
			h.wantOneDeletion(t, tc.wantResult)
		})
	}
}

// The read-back of an item in another cluster asks that cluster: asked of the
// engine's own, where the item never was, a refused delete read as done — a
// Deleted event, and the item, still there, listed nowhere.
func TestProcessItemsDeleteFailedInAnotherCluster(t *testing.T) {
	remote := newHarness(t, cm("due", stamped("2025-03-14T12:00:00Z"), map[string]string{pendingKey: "true"}))
	remote.deleteErr = apierrors.NewInternalError(errors.New(`failed calling webhook "validate.example.com": connection refused`))
	local := newHarness(t)
	out := local.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Cluster: &softdelete.Cluster{Name: "workload-kubeconfig", Client: remote.client},
		Items:   []softdelete.Item{remote.item(t, "due", false, "g", 0)}})
	if out.Err == nil || len(out.Pending) != 1 {
		t.Errorf("outcome %+v: want the delete's error and the item listed", out)
	}
	if events := strings.Join(local.events(), "\n"); !strings.Contains(events, "Warning DeleteFailed ConfigMap team-a/due in cluster workload-kubeconfig") || strings.Contains(events, "Normal Deleted") {
		t.Errorf("events:\n%s\nwant a DeleteFailed, no Deleted", events)
	}
}

// A stamp or a cancel whose answer was lost after the API server made it is
// read back: made, it is announced (its DeletionScheduled, its
// DeletionCancelled) as any other, not a failure after which the next pass
// finds the countdown running — or gone — without a word in the events.
func TestEngineMarksWhoseAnswerWasLost(t *testing.T) {
	timeout := apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
	t.Run("stamp", func(t *testing.T) {
		h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
		h.patchLost = timeout
		out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil)
		if out.Err != nil || out.Pending == nil || out.Pending.DeleteAfter == nil {
			t.Errorf("outcome %+v: want the countdown, no error", out)
		}
		if events := h.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Normal DeletionScheduled ConfigMap team-a/db is in limbo for 1h0m0s") {
			t.Errorf("events %q, want the DeletionScheduled", events)
		}
	})
	t.Run("stamp not made", func(t *testing.T) {
		h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
		h.patchErr = timeout
		if out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil); out.Err == nil {
			t.Errorf("outcome %+v: want the error", out)
		}
		if events := h.events(); len(events) != 0 {
			t.Errorf("events %q, want none", events)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		h := newHarness(t, cm("db", map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}, map[string]string{pendingKey: "true"}))
		h.patchLost = timeout
		if cancelled, err := h.engine.Desired(context.Background(), bundle(), h.live(t, "db")); !cancelled || err != nil {
			t.Errorf("Desired = %v, %v; want cancelled, no error", cancelled, err)
		}
		if events := h.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Normal DeletionCancelled ConfigMap team-a/db") {
			t.Errorf("events %q, want the DeletionCancelled", events)
		}
	})
	// The read-back finds another object of the name (deleted and made again
	// meanwhile), without marks: that is not the cancel made, and the object
	// cancelled no longer exists. Announced, the cancel's failure was lost for
	// good: no error, nothing retried.
	t.Run("cancel not made, the name made again meanwhile", func(t *testing.T) {
		again := cm("db", nil, nil)
		again.SetUID("uid-db-again")
		h := newHarness(t, again)
		h.patchErr = timeout
		old := cm("db", map[string]string{delayKey: "1h", stampKey: "2025-03-14T12:00:00Z"}, map[string]string{pendingKey: "true"})
		old.SetResourceVersion("998")
		if cancelled, err := h.engine.Desired(context.Background(), bundle(), old); cancelled || !errors.Is(err, timeout) {
			t.Errorf("Desired = %v, %v; want not cancelled, the timeout", cancelled, err)
		}
		if events := h.events(); len(events) != 0 {
			t.Errorf("events %q, want none", events)
		}
	})
}
