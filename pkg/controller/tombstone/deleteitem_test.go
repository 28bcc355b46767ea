package tombstone

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/impersonation"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The plugin deletes the item as the Bundle's passes call it: with the
// plugins' client (PluginClient), and acting as the Bundle's ServiceAccount
// (the default one when the Bundle names none).
func TestReconcileDeleteRequest(t *testing.T) {
	h := newHarness(t, 0)
	pluginClient := &pluginsClient{h.client}
	h.r.PluginClient = pluginClient
	// The credentials are read as the ServiceAccount: limbo's client
	// impersonates (its writers are made, never used here).
	h.r.Client = impersonation.NewClient(h.client, nil, &rest.Config{Host: "https://127.0.0.1:1"})
	h.r.DefaultServiceAccount = "limbo-bundles"
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	h.reconcile()
	h.plugin.mu.Lock()
	defer h.plugin.mu.Unlock()
	if h.plugin.calls.Load() != 1 || h.plugin.client != client.Client(pluginClient) {
		t.Errorf("%d deletes, Request.Client %T; want one, with the plugins' client", h.plugin.calls.Load(), h.plugin.client)
	}
	if want := impersonation.Username("team", "limbo-bundles"); h.plugin.user != want {
		t.Errorf("the delete acted as %q, want %q", h.plugin.user, want)
	}
}

// pluginsClient is a client told apart from the harness's.
type pluginsClient struct{ client.Client }

// A delete that cannot even be asked of the plugin — the plugin is not
// compiled in (any more), cannot delete external items, the Bundle's
// ServiceAccount cannot be impersonated, or its spec cannot be resolved — is a
// failed delete: recorded, retried after the backoff, the
// Tombstone kept. Taken for success, the Tombstone would go and the item stay
// for good, with a Deleted event saying otherwise.
func TestReconcileDeleteThatCannotBeAsked(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, h *harness)
		wantErr string
	}{
		{name: "unknown plugin", wantErr: "flaky", change: func(t *testing.T, h *harness) {
			plugins, err := plugin.NewRegistry(planOnly{name: "other"})
			if err != nil {
				t.Fatal(err)
			}
			h.r.Plugins = plugins
		}},
		{name: "a plugin without external deletes", wantErr: `plugin "flaky" cannot delete external items`, change: func(t *testing.T, h *harness) {
			plugins, err := plugin.NewRegistry(planOnly{name: "flaky"})
			if err != nil {
				t.Fatal(err)
			}
			h.r.Plugins = plugins
		}},
		// Its credentials would be read as limbo, not as the ServiceAccount.
		{name: "its ServiceAccount cannot be impersonated", wantErr: "cannot read Secrets as system:serviceaccount:team:limbo-bundles", change: func(t *testing.T, h *harness) {
			h.r.DefaultServiceAccount = "limbo-bundles"
		}},
		{name: "its spec references an object that is gone", wantErr: "plugin spec: ", change: func(t *testing.T, h *harness) {
			var b limbov1alpha1.Bundle
			if err := h.client.Get(ctx, client.ObjectKey{Namespace: "team", Name: "shop"}, &b); err != nil {
				t.Fatal(err)
			}
			b.Spec.Resources[0].References = []limbov1alpha1.Reference{{Name: "host", Resource: "db", Path: "data.host"}}
			b.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "db", State: limbov1alpha1.ResourceReady,
				Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "db"}}}
			if err := h.client.Update(ctx, &b); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			h.reconcile() // the countdown
			h.clock.Step(time.Minute)
			tc.change(t, h)
			res := h.reconcile()
			ts := h.tombstone()
			if ts == nil || !strings.Contains(ts.Status.LastError, tc.wantErr) || res.RequeueAfter != baseBackoff {
				t.Fatalf("Reconcile = %+v, Tombstone %+v; want it kept with lastError %q, retried after %v", res, ts, tc.wantErr, baseBackoff)
			}
			if n := h.plugin.calls.Load(); n != 0 {
				t.Errorf("the plugin was asked %d times, want never", n)
			}
			if got := h.sample("limbo_deletions_total", softdelete.ResultDeleted).GetCounter().GetValue(); got != 0 {
				t.Errorf(`limbo_deletions_total{result="deleted"} = %v, want 0`, got)
			}
		})
	}
}

// planOnly is a plugin without external deletes.
type planOnly struct{ name string }

func (p planOnly) Describe() plugin.Description { return plugin.Description{Name: p.name} }
func (planOnly) Plan(context.Context, plugin.Request) (*plugin.Result, error) {
	return &plugin.Result{Ready: true}, nil
}

// A plugin that refuses the item as no longer its own (ErrNotResponsible: the
// resource's spec narrowed since the countdown began, or the item is desired
// again) has the Tombstone cancelled: the item stays, and nothing is retried.
func TestReconcileNotResponsible(t *testing.T) {
	h := newHarness(t, 1)
	h.plugin.err = fmt.Errorf("Thing 42 is outside the spec's prefix: %w", plugin.ErrNotResponsible)
	h.reconcile() // the countdown
	h.clock.Step(time.Minute)
	if res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key}); err != nil || res != (ctrl.Result{}) {
		t.Errorf("Reconcile = %+v, %v; want no retry", res, err)
	}
	if ts := h.tombstone(); ts != nil {
		t.Errorf("Tombstone %+v, want it cancelled", ts)
	}
	if n := h.plugin.calls.Load(); n != 1 {
		t.Errorf("%d delete calls, want 1", n)
	}
	if got := h.sample("limbo_deletions_total", softdelete.ResultFailed).GetCounter().GetValue(); got != 0 {
		t.Errorf(`limbo_deletions_total{result="failed"} = %v, want 0: nothing failed`, got)
	}
	// The plugin said the item stays: the cancel does not say it may be gone,
	// though an attempt was made.
	for e := h.event(); e != ""; e = h.event() {
		if strings.Contains(e, "DeletionCancelled") && strings.Contains(e, "may be gone") {
			t.Errorf("event %q: the plugin kept the item, yet the cancel says it may be gone", e)
		}
	}
}

// A "not mine" answer after an earlier attempt whose answer was lost: this
// attempt deleted nothing, the earlier one may have — the cancel says so
// (a route removed by a delete that timed out, its server back since).
func TestReconcileNotResponsibleAfterAnEarlierAttempt(t *testing.T) {
	h := newHarness(t, 1)
	h.plugin.err = fmt.Errorf("its next hop is an address of server X again: %w", plugin.ErrNotResponsible)
	h.reconcile() // the countdown
	ts := h.tombstone()
	earlier := metav1.NewTime(h.clock.Now().Add(30 * time.Second))
	ts.Status.Attempts, ts.Status.LastAttemptTime = 1, &earlier
	if err := h.client.Status().Update(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(time.Hour)
	if _, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key}); err != nil {
		t.Fatal(err)
	}
	var cancelled string
	for e := h.event(); e != ""; e = h.event() {
		if strings.Contains(e, "DeletionCancelled") {
			cancelled = e
		}
	}
	if !strings.Contains(cancelled, "1 delete attempts were made") || !strings.Contains(cancelled, "may be gone") {
		t.Errorf("cancel event %q: want it to say the earlier attempt may have deleted the item", cancelled)
	}
}
