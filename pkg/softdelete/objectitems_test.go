package softdelete_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

const (
	owner    = "team-a/shop/node-removal"
	ownerKey = limbov1alpha1.AnnotationPluginResource
)

// item is a plugin's object item as read live (from the fake client).
func (h *harness) item(t *testing.T, name string, desired bool, group string, order int, clear ...string) softdelete.Item {
	return softdelete.Item{Object: h.live(t, name), Desired: desired, Group: group, Order: order, ClearFinalizers: clear}
}

func withFinalizers(u *unstructured.Unstructured, f ...string) *unstructured.Unstructured {
	u.SetFinalizers(f)
	return u
}

func stamped(stamp string) map[string]string {
	return map[string]string{delayKey: "10m", stampKey: stamp, ownerKey: owner}
}

func messages(pending []limbov1alpha1.PendingDeletion) map[string]string {
	out := map[string]string{}
	for _, p := range pending {
		out[p.Name] = p.Message
	}
	return out
}

// A new orphan is stamped with the resource's delay and owner, in one write on
// the object as read; it gets no bundle label.
func TestProcessItemsStamp(t *testing.T) {
	h := newHarness(t, cm("drive", nil, nil))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "drive", false, "n1", 0)}})
	want := []string{`PATCH ConfigMap team-a/drive application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	if out.Err != nil || !out.WakeAt.Equal(now.Add(10*time.Minute-250*time.Millisecond)) {
		t.Errorf("outcome = %+v", out)
	}
	if len(out.Pending) != 1 || out.Pending[0].DeleteAfter == nil || !out.Pending[0].DeleteAfter.Time.Equal(at("2025-03-14T12:40:45Z")) {
		t.Errorf("pending = %+v", out.Pending)
	}
	if ev := h.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal DeletionScheduled ConfigMap team-a/drive is in limbo for 10m0s") {
		t.Errorf("events %q", ev)
	}
	if _, labelled := h.live(t, "drive").GetLabels()[bundleKey]; labelled {
		t.Error("an object item got the limbo.dev/bundle label")
	}
}

// A desired item in limbo for this resource loses everything limbo wrote (its
// expedited countdown's note too); one in limbo for another resource, of a
// Bundle that exists, is left alone.
func TestProcessItemsCancel(t *testing.T) {
	other := map[string]string{delayKey: "10m", stampKey: "2025-03-14T12:00:00Z", ownerKey: "team-b/x/node-removal"}
	expedited := stamped("2025-03-14T12:00:00Z")
	expedited[expeditedKey] = "2025-03-14T12:05:00Z"
	h := newHarness(t, cm("mine", expedited, map[string]string{pendingKey: "true"}),
		cm("theirs", other, map[string]string{pendingKey: "true"}), bundleNamed("team-b", "x"))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "mine", true, "n1", 0), h.item(t, "theirs", false, "n1", 0)}})
	want := []string{`PATCH ConfigMap team-a/mine application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":null,"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},"resourceVersion":"999"}}`}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	if left := h.live(t, "mine").GetAnnotations(); len(left) != 0 {
		t.Errorf("left on the item: %v, want nothing of limbo's", left)
	}
	if got := messages(out.Pending); len(got) != 1 || !strings.Contains(got["theirs"], "team-b/x/node-removal") {
		t.Errorf("pending = %v, want only theirs, naming its owner", got)
	}
	if ev := h.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal DeletionCancelled ConfigMap team-a/mine") {
		t.Errorf("events %q", ev)
	}
}

// At the deadline a group goes in Order: listed finalizers are cleared first,
// others are kept, and a kept finalizer leaves the object listed as terminating.
func TestProcessItemsDeleteOrder(t *testing.T) {
	due := stamped("2025-03-14T12:00:00Z")
	h := newHarness(t, cm("a-node", due, nil), withFinalizers(cm("b-volume", due, nil), "volume-cleanup", "other"),
		cm("c-drive", due, nil), withFinalizers(cm("d-node", due, nil), "node-cleanup"))
	items := []softdelete.Item{
		h.item(t, "a-node", false, "n1", 2), // sorted by order, not by name
		h.item(t, "b-volume", false, "n1", 1, "volume-cleanup"),
		h.item(t, "c-drive", false, "n1", 0),
	}
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: items})
	want := []string{
		"DELETE ConfigMap team-a/c-drive uid=uid-c-drive rv=999 propagation=Background",
		`PATCH ConfigMap team-a/b-volume application/merge-patch+json {"metadata":{"finalizers":["other"],"resourceVersion":"999"}}`,
		"DELETE ConfigMap team-a/b-volume uid=uid-b-volume rv=1000 propagation=Background", // the patched version,
	}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	got := messages(out.Pending)
	if !strings.Contains(got["b-volume"], "being deleted; held by finalizers: other") ||
		!strings.Contains(got["a-node"], "waiting for ConfigMap team-a/b-volume to be deleted first") || len(got) != 2 {
		t.Errorf("pending = %v", got)
	}
	if h.get(t, "c-drive") != nil || h.get(t, "a-node") == nil {
		t.Error("c-drive must be gone and a-node kept")
	}

	// Once the volume's other finalizer goes, the node is deleted with its own
	// finalizer kept, and it is deleted once.
	volume := h.live(t, "b-volume")
	volume.SetFinalizers(nil)
	if err := h.client.Update(context.Background(), volume); err != nil {
		t.Fatal(err)
	}
	h.calls = nil
	for pass := 0; pass < 2; pass++ {
		out = h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
			Items: []softdelete.Item{{Object: h.live(t, "d-node"), Group: "n2", Order: 2}}})
	}
	if want := []string{"DELETE ConfigMap team-a/d-node uid=uid-d-node rv=999 propagation=Background"}; !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls %q, want one delete", h.calls)
	}
	if live := h.live(t, "d-node"); live.GetDeletionTimestamp() == nil || !reflect.DeepEqual(live.GetFinalizers(), []string{"node-cleanup"}) {
		t.Errorf("d-node: deletionTimestamp %v, finalizers %v", live.GetDeletionTimestamp(), live.GetFinalizers())
	}
	if got := h.metric(t, "limbo_deletions_total", softdelete.ResultDeleted); got != 3 {
		t.Errorf("limbo_deletions_total{deleted} = %v, want 3", got)
	}
}

// A failed delete holds the rest of its group, never another group; a gate's
// hold keeps its group's due items, with the reason.
func TestProcessItemsGroupsAreIndependent(t *testing.T) {
	due := stamped("2025-03-14T12:00:00Z")
	h := newHarness(t, cm("n1-drive", due, nil), cm("n1-node", due, nil), cm("n2-drive", due, nil), cm("n3-drive", due, nil))
	h.deleteErr = errors.New("refused")
	asked := map[string]int{}
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "n1-drive", false, "n1", 0), h.item(t, "n1-node", false, "n1", 1),
			h.item(t, "n2-drive", false, "n2", 0), h.item(t, "n3-drive", false, "n3", 0)},
		MayDelete: func(_ context.Context, group string) (string, error) {
			asked[group]++
			if group == "n2" {
				return "pod x is still bound to n2", nil
			}
			return "", nil
		}})
	want := []string{"DELETE ConfigMap team-a/n1-drive uid=uid-n1-drive rv=999 propagation=Background", "DELETE ConfigMap team-a/n3-drive uid=uid-n3-drive rv=999 propagation=Background"}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	if !reflect.DeepEqual(asked, map[string]int{"n1": 1, "n2": 1, "n3": 1}) {
		t.Errorf("gate asked %v, want once per group", asked)
	}
	got := messages(out.Pending)
	if !strings.Contains(got["n1-drive"], "refused") || !strings.Contains(got["n1-node"], "waiting for ConfigMap team-a/n1-drive") ||
		got["n2-drive"] != "due; held: pod x is still bound to n2" || !strings.Contains(got["n3-drive"], "refused") {
		t.Errorf("pending = %v", got)
	}
	if out.Err == nil || out.WakeAt.IsZero() {
		t.Errorf("outcome = %+v, want the error and a requeue for the hold", out)
	}
}

// While the Bundle is not Ready, orphans are listed and nothing is written.
func TestProcessItemsHold(t *testing.T) {
	h := newHarness(t, cm("new", nil, nil), cm("due", stamped("2025-03-14T12:00:00Z"), nil))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Hold: "not ready",
		Items: []softdelete.Item{h.item(t, "new", false, "n1", 0), h.item(t, "due", false, "n1", 0)}})
	if len(h.calls) != 0 {
		t.Errorf("API calls %q, want none", h.calls)
	}
	for _, p := range out.Pending {
		if p.Message != "not ready" || (p.Name == "new") != (p.DeleteAfter == nil) {
			t.Errorf("pending %+v", p)
		}
	}
}

// An item in limbo says the delay its countdown runs with — the resource's,
// which the state machine uses — whether the countdown is held or not:
// `kubectl limbo pending` and `expedite` read it from the item. Before, an item
// held (its Bundle not Ready, its gate closed) kept the delay of its stamp: after
// the resource's delay was lowered from 24h to 10m, pending showed 23h left for an
// item due at once, and expedite computed its stamp from the old delay.
func TestProcessItemsDelayRefreshed(t *testing.T) {
	refresh := func(name string) string {
		return `PATCH ConfigMap team-a/` + name + ` application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m"},"resourceVersion":"999"}}`
	}
	oldDelay := func(stamp string) map[string]string {
		return map[string]string{delayKey: "24h", stampKey: stamp, ownerKey: owner}
	}
	closed := func(context.Context, string) (string, error) { return "a pod still runs on the node", nil }
	for _, tc := range []struct {
		name      string
		item      *unstructured.Unstructured
		hold      string
		mayDelete func(context.Context, string) (string, error)
		noDelay   bool // the resource has no deletionDelay
		// lower, when set, is an item of a lower order, due, that a finalizer
		// it keeps holds: x waits for it.
		lower *unstructured.Unstructured
		want  []string
	}{
		{name: "counting down", item: cm("x", oldDelay("2025-03-14T12:25:00Z"), nil), want: []string{refresh("x")}},
		{name: "counting down, the Bundle not Ready", item: cm("x", oldDelay("2025-03-14T12:25:00Z"), nil), hold: "not ready", want: []string{refresh("x")}},
		{name: "due, the Bundle not Ready", item: cm("x", oldDelay("2025-03-14T12:00:00Z"), nil), hold: "not ready", want: []string{refresh("x")}},
		{name: "due, the gate closed", item: cm("x", oldDelay("2025-03-14T12:00:00Z"), nil), mayDelete: closed, want: []string{refresh("x")}},
		{name: "due and deleted: no write before", item: cm("x", oldDelay("2025-03-14T12:00:00Z"), nil), want: []string{"DELETE ConfigMap team-a/x uid=uid-x rv=999 propagation=Background"}},
		{name: "due, waiting for a lower order's item to go", item: cm("x", oldDelay("2025-03-14T12:00:00Z"), nil),
			lower: withFinalizers(cm("a", stamped("2025-03-14T12:00:00Z"), nil), "kept"),
			want:  []string{"DELETE ConfigMap team-a/a uid=uid-a rv=999 propagation=Background", refresh("x")}},
		{name: "the delay already the resource's", item: cm("x", stamped("2025-03-14T12:25:00Z"), nil), hold: "not ready", want: nil},
		{name: "the resource's delay removed, the Bundle not Ready: the annotation goes", item: cm("x", oldDelay("2025-03-14T12:25:00Z"), nil), hold: "not ready", noDelay: true,
			want: []string{`PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":null},"resourceVersion":"999"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{tc.item}
			if tc.lower != nil {
				objs = append(objs, tc.lower)
			}
			h := newHarness(t, objs...)
			delay := "10m"
			if tc.noDelay {
				delay = ""
			}
			items := []softdelete.Item{h.item(t, "x", false, "n1", 1)}
			if tc.lower != nil {
				items = append(items, h.item(t, tc.lower.GetName(), false, "n1", 0))
			}
			out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: delay, Hold: tc.hold, MayDelete: tc.mayDelete,
				Items: items})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if !reflect.DeepEqual(h.calls, tc.want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, tc.want)
			}
		})
	}
}

// An item deleted by someone else since it was read is read again, whatever the
// write that found it gone — a stamp, the delay written back: no failure.
func TestProcessItemsItemGoneBeforeItsWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		item *unstructured.Unstructured
	}{
		{"its stamp", cm("x", nil, nil)},
		{"its delay written back", cm("x", map[string]string{delayKey: "24h", stampKey: "2025-03-14T12:25:00Z", ownerKey: owner}, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.item)
			read := h.item(t, "x", false, "n1", 0)
			if err := h.client.Delete(context.Background(), read.Object.DeepCopyObject().(client.Object)); err != nil {
				t.Fatal(err)
			}
			out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{read}})
			if out.Err != nil || !out.ReadAgain {
				t.Errorf("Err/ReadAgain = %v/%v, want nil/true", out.Err, out.ReadAgain)
			}
		})
	}
}

// A resource without a delay deletes its orphan items at once, whatever delay
// they carry of their own (an object a Bundle of the target cluster made with
// its own limbo.dev/deletionDelay, a value set by hand): the resource's delay
// decides items. It stamped them with their own delay and wrote an empty one,
// which the next pass found invalid, and the item was never deleted.
func TestProcessItemsWithoutADelay(t *testing.T) {
	del := "DELETE ConfigMap team-a/x uid=uid-x rv=999 propagation=Background"
	for _, tc := range []struct {
		name  string
		delay string // the resource's
		own   map[string]string
		want  []string
	}{
		{"its own delay", "", map[string]string{delayKey: "24h"}, []string{del}},
		{"its own delay invalid", "", map[string]string{delayKey: "soon"}, []string{del}},
		{"its own delay empty", "", map[string]string{delayKey: ""}, []string{del}},
		{"the resource's delay over an invalid own one", "10m", map[string]string{delayKey: "soon"},
			[]string{`PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("x", tc.own, nil))
			out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: tc.delay,
				Items: []softdelete.Item{h.item(t, "x", false, "n1", 0)}})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if !reflect.DeepEqual(h.calls, tc.want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, tc.want)
			}
		})
	}
}

// Items of another cluster (ItemSet.Cluster) are stamped, cancelled and deleted
// through that cluster's client, never the engine's own, and their
// pendingDeletions entries and events name the cluster.
func TestProcessItemsInAnotherCluster(t *testing.T) {
	remote := newHarness(t, cm("new", nil, nil), cm("due", stamped("2025-03-14T12:00:00Z"), map[string]string{pendingKey: "true"}),
		cm("back", stamped("2025-03-14T12:29:00Z"), map[string]string{pendingKey: "true"}))
	local := newHarness(t)
	out := local.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Cluster: &softdelete.Cluster{Name: "workload-kubeconfig", Client: remote.client},
		Items:   []softdelete.Item{remote.item(t, "new", false, "g", 0), remote.item(t, "due", false, "g", 0), remote.item(t, "back", true, "g", 0)}})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if len(local.calls) != 0 {
		t.Errorf("the engine's own cluster got %q", local.calls)
	}
	want := []string{
		`PATCH ConfigMap team-a/back application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":null,"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},"resourceVersion":"999"}}`,
		`DELETE ConfigMap team-a/due uid=uid-due rv=999 propagation=Background`,
		`PATCH ConfigMap team-a/new application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`,
	}
	if !reflect.DeepEqual(remote.calls, want) {
		t.Errorf("calls to the other cluster:\n%q\nwant:\n%q", remote.calls, want)
	}
	if len(out.Pending) != 1 || out.Pending[0].Name != "new" || out.Pending[0].Cluster != "workload-kubeconfig" {
		t.Errorf("pending = %+v; want one entry for new, naming the cluster", out.Pending)
	}
	events := strings.Join(local.events(), "\n")
	for _, w := range []string{"ConfigMap team-a/back in cluster workload-kubeconfig: deletion cancelled",
		"ConfigMap team-a/due in cluster workload-kubeconfig deleted", "ConfigMap team-a/new in cluster workload-kubeconfig is in limbo for 10m0s"} {
		if !strings.Contains(events, w) {
			t.Errorf("events lack %q:\n%s", w, events)
		}
	}
}

// A write on an item as it was read (its resourceVersion) that meets a Conflict
// means the item changed since: read and decide again, soon — as for objects,
// one implementation of the stamp and the delete serving both. Before, each of
// these was an error for items (the pass failed and backed off), while an
// object's stamp or delete came back at once.
func TestProcessItemsConflictIsReadAgain(t *testing.T) {
	due := stamped("2025-03-14T12:00:00Z")
	for _, tc := range []struct {
		name        string
		item        *unstructured.Unstructured
		desired     bool
		clear       []string
		wantCall    string
		wantPending string // the message of the item's entry; "-" for no entry
	}{
		{name: "stamp", item: cm("x", nil, nil),
			wantCall: `PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"998"}}`},
		{name: "delete", item: cm("x", due, nil),
			wantCall: "DELETE ConfigMap team-a/x uid=uid-x rv=998 propagation=Background", wantPending: "deleting"},
		{name: "finalizers cleared before the delete", item: withFinalizers(cm("x", due, nil), "volume-cleanup"), clear: []string{"volume-cleanup"},
			wantCall: `PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"finalizers":[],"resourceVersion":"998"}}`, wantPending: "deleting"},
		{name: "the resource's delay written", item: cm("x", map[string]string{delayKey: "24h", stampKey: "2025-03-14T12:25:00Z", ownerKey: owner}, nil),
			wantCall: `PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m"},"resourceVersion":"998"}}`},
		{name: "cancel", item: cm("x", due, map[string]string{pendingKey: "true"}), desired: true,
			wantCall:    `PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":null,"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},"resourceVersion":"998"}}`,
			wantPending: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// y's countdown runs: its deadline stays the requeue, beside the
			// read again (folded into "at once", a pass that also failed kept no
			// deadline).
			h := newHarness(t, tc.item, cm("y", stamped("2025-03-14T12:30:00Z"), map[string]string{pendingKey: "true"}))
			it := h.item(t, "x", tc.desired, "n1", 0, tc.clear...)
			it.Object.SetResourceVersion("998") // changed since it was read
			out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{it, h.item(t, "y", false, "n2", 0)}})
			if want := []string{tc.wantCall}; !reflect.DeepEqual(h.calls, want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
			}
			if out.Err != nil || !out.ReadAgain || !out.WakeAt.After(now) || out.WakeAt.After(now.Add(9*time.Minute+15*time.Second)) {
				t.Errorf("Err/ReadAgain/WakeAt = %v/%v/%v, want nil/true/a deadline by y's (in 9m15s)", out.Err, out.ReadAgain, out.WakeAt)
			}
			got, ok := messages(out.Pending)["x"]
			switch {
			case tc.wantPending == "-" && ok:
				t.Errorf("listed: %q", got)
			case tc.wantPending != "-" && got != tc.wantPending:
				t.Errorf("pending message %q, want %q", got, tc.wantPending)
			}
			if ev := h.events(); len(ev) != 0 {
				t.Errorf("events %q after a write that did not happen", ev)
			}
			if got := h.metric(t, "limbo_deletions_total", softdelete.ResultFailed); got != 0 {
				t.Errorf("limbo_deletions_total{failed} = %v, want 0", got)
			}
		})
	}
}

// An orphan held while its Bundle is not Ready has the same pendingDeletions
// entry whether it is an object (Engine.Pending) or a plugin's item (ItemSet.Hold):
// no countdown before its stamp, the hold as its message — except for an invalid
// delay, whose message says what must be fixed. Before, an item's hold overwrote
// that message.
func TestHeldEntryOfObjectsAndItems(t *testing.T) {
	const hold = "waiting for every resource of the Bundle to be Ready"
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantMessage string
		wantDue     bool // DeleteAfter set
	}{
		{name: "not stamped yet", annotations: map[string]string{delayKey: "10m", ownerKey: owner}, wantMessage: hold},
		{name: "counting down", annotations: map[string]string{delayKey: "10m", stampKey: "2025-03-14T12:25:00Z", ownerKey: owner}, wantMessage: hold, wantDue: true},
		{name: "due", annotations: map[string]string{delayKey: "10m", stampKey: "2025-03-14T12:00:00Z", ownerKey: owner}, wantMessage: hold, wantDue: true},
		{name: "invalid delay", annotations: map[string]string{delayKey: "soon", ownerKey: owner},
			wantMessage: `invalid limbo.dev/deletionDelay "soon": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("x", tc.annotations, nil))
			object := h.engine.Pending(h.live(t, "x"), hold)
			out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: tc.annotations[delayKey], Hold: hold,
				Items: []softdelete.Item{h.item(t, "x", false, "n1", 0)}})
			if len(out.Pending) != 1 {
				t.Fatalf("item entries %+v, want one", out.Pending)
			}
			item := out.Pending[0]
			if !pendingEqual(object, &item) {
				t.Errorf("object's entry %+v, item's %+v: want the same", object, item)
			}
			if item.Message != tc.wantMessage || (item.DeleteAfter != nil) != tc.wantDue {
				t.Errorf("entry %+v, want message %q, deadline %v", item, tc.wantMessage, tc.wantDue)
			}
			if len(h.calls) != 0 {
				t.Errorf("API calls %q, want none", h.calls)
			}
		})
	}
}

// An item's failed delete is reported as an object's is (one implementation):
// counted failed, a DeleteFailed event and the error, naming its cluster. Before,
// an item's event lacked the "delete" the object's says.
func TestProcessItemsDeleteFailedAsAnObject(t *testing.T) {
	h := newHarness(t, cm("x", stamped("2025-03-14T12:00:00Z"), nil))
	h.deleteErr = errors.New("refused")
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "x", false, "n1", 0)}})
	if out.Err == nil || out.Err.Error() != "delete ConfigMap team-a/x: refused" {
		t.Errorf("Err = %v", out.Err)
	}
	if got, want := h.events(), []string{"Warning DeleteFailed ConfigMap team-a/x: delete ConfigMap team-a/x: refused"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if got := messages(out.Pending)["x"]; got != "delete ConfigMap team-a/x: refused" {
		t.Errorf("pending message %q", got)
	}
	h.wantOneDeletion(t, softdelete.ResultFailed)
}

// A stamp whose deadline is before ItemSet.NotBefore is an earlier owner's: a
// Bundle of the same name, deleted and made again, finds the stamps its
// predecessor left (deorbit's debris after it gave up, at 10m past the hour) and
// its teardown (NotBefore: its deletion, 12:30:00) starts their countdowns
// again, evented as any stamp, instead of deleting them at once. Before, the
// first teardown pass deleted them: the grace was skipped. The deadline decides,
// not the stamp: an expedited item (stamp set back by the delay) is due.
func TestProcessItemsNotBefore(t *testing.T) {
	stampAt := func(stamp string) string {
		return `PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"` + stamp +
			`","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`
	}
	const deleted = "DELETE ConfigMap team-a/x uid=uid-x rv=999 propagation=Background"
	inLimbo := map[string]string{pendingKey: "true"}
	for _, tc := range []struct {
		name      string
		stamp     string // "": none
		unlabeled bool   // the stamp without the pending-deletion label
		desired   bool
		notBefore string // "": none
		want      []string
		deadline  string // of the item's pendingDeletions entry; "": no entry
		warning   string // the event before a restamp's DeletionScheduled; "": none
	}{
		{name: "no NotBefore: an old stamp is due, as ever", stamp: "2025-03-11T12:10:00Z",
			want: []string{deleted}},
		{name: "an earlier owner's stamp: stamped again, not deleted", stamp: "2025-03-11T12:10:00Z", notBefore: "2025-03-14T12:30:00Z",
			want: []string{stampAt("2025-03-14T12:30:45Z")}, deadline: "2025-03-14T12:40:45Z"},
		{name: "an earlier owner's stamp due a second before NotBefore", stamp: "2025-03-14T12:19:59Z", notBefore: "2025-03-14T12:30:00Z",
			want: []string{stampAt("2025-03-14T12:30:45Z")}, deadline: "2025-03-14T12:40:45Z"},
		{name: "stamped after NotBefore: kept", stamp: "2025-03-14T12:30:10Z", notBefore: "2025-03-14T12:30:00Z",
			deadline: "2025-03-14T12:40:10Z"},
		{name: "stamped after NotBefore, and due: deleted", stamp: "2025-03-14T12:20:00Z", notBefore: "2025-03-14T12:15:00Z",
			want: []string{deleted}},
		{name: "expedited: the stamp before NotBefore, the deadline not: deleted", stamp: "2025-03-14T12:20:10Z", notBefore: "2025-03-14T12:30:00Z",
			want: []string{deleted}},
		{name: "a stamp before NotBefore whose deadline is not: kept", stamp: "2025-03-14T12:25:00Z", notBefore: "2025-03-14T12:30:00Z",
			deadline: "2025-03-14T12:35:00Z"},
		{name: "NotBefore with a fraction of a second, as stamps are", stamp: "2025-03-14T12:20:00Z", notBefore: "2025-03-14T12:30:00.75Z",
			want: []string{deleted}},
		{name: "an unstamped item, the clock behind NotBefore: stamped at NotBefore", notBefore: "2025-03-14T12:30:47Z",
			want: []string{stampAt("2025-03-14T12:30:47Z")}, deadline: "2025-03-14T12:40:47Z"},
		// A restamp is a new countdown too: at now, 30 s before NotBefore, its
		// deadline came up to the clocks' skew early.
		{name: "an unparsable stamp, the clock behind NotBefore: restamped at NotBefore", stamp: "banana", notBefore: "2025-03-14T12:31:15Z",
			want: []string{stampAt("2025-03-14T12:31:15Z")}, deadline: "2025-03-14T12:41:15Z",
			warning: `Warning InvalidDeletionTimestamp ConfigMap team-a/x: invalid limbo.dev/deletionTimestamp "banana": not an RFC 3339 time; the countdown restarts`},
		{name: "desired again, with an earlier owner's stamp and no label: cancelled", stamp: "2025-03-11T12:10:00Z", unlabeled: true, desired: true, notBefore: "2025-03-14T12:30:00Z",
			want: []string{`PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":null,"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},"resourceVersion":"999"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := cm("x", nil, nil)
			if tc.stamp != "" {
				item = cm("x", stamped(tc.stamp), inLimbo)
			}
			if tc.unlabeled {
				item.SetLabels(nil)
			}
			h := newHarness(t, item)
			set := softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{h.item(t, "x", tc.desired, "n1", 0)}}
			if tc.notBefore != "" {
				set.NotBefore = at(tc.notBefore)
			}
			out := h.engine.ProcessItems(context.Background(), bundle(), set)
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if !reflect.DeepEqual(h.calls, tc.want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, tc.want)
			}
			switch {
			case tc.deadline == "" && len(out.Pending) != 0:
				t.Errorf("pending = %+v, want none", out.Pending)
			case tc.deadline != "" && (len(out.Pending) != 1 || out.Pending[0].DeleteAfter == nil || !out.Pending[0].DeleteAfter.Time.Equal(at(tc.deadline))):
				t.Errorf("pending = %+v, want one entry due at %s", out.Pending, tc.deadline)
			case tc.deadline != "" && !out.WakeAt.Equal(at(tc.deadline)):
				t.Errorf("wake at %v, want %s", out.WakeAt, tc.deadline)
			}
			if restamped := len(tc.want) == 1 && strings.Contains(tc.want[0], `"limbo.dev/pending-deletion":"true"`); restamped {
				var want []string
				if tc.warning != "" {
					want = append(want, tc.warning)
				}
				want = append(want, "Normal DeletionScheduled ConfigMap team-a/x is in limbo for 10m0s: deleted at "+tc.deadline)
				if ev := h.events(); !reflect.DeepEqual(ev, want) {
					t.Errorf("events %q, want %q: DeletionScheduled as for any stamp", ev, want)
				}
			}
		})
	}
}

// A teardown's countdowns run from the Bundle's deletion (ItemSet.CountFrom): an
// item first listed later — its cluster unreachable, the controller down — is
// stamped at the deletion, and due at the deletion plus the delay. deorbit's
// timeout runs from the deletion too: items stamped when first listed, an hour
// and a half late with a 1h delay and a 2h timeout, were not due before it gave
// up, and nothing was deleted.
func TestProcessItemsCountFrom(t *testing.T) {
	stampAt := func(stamp string) string {
		return `PATCH ConfigMap team-a/x application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"` + stamp +
			`","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`
	}
	inLimbo := map[string]string{pendingKey: "true"}
	for _, tc := range []struct {
		name     string
		stamp    string // "": none
		from     string
		want     []string
		deadline string // of the item's pendingDeletions entry; "": no entry
	}{
		{name: "first listed 45s after the deletion: stamped at the deletion", from: "2025-03-14T12:30:00Z",
			want: []string{stampAt("2025-03-14T12:30:00Z")}, deadline: "2025-03-14T12:40:00Z"},
		{name: "first listed past the deletion plus the delay: stamped at the deletion, due", from: "2025-03-14T10:00:00.5Z",
			want: []string{stampAt("2025-03-14T10:00:00Z")}, deadline: "2025-03-14T10:10:00Z"},
		{name: "an earlier owner's stamp: stamped anew at the deletion", stamp: "2025-03-11T12:10:00Z", from: "2025-03-14T12:30:00Z",
			want: []string{stampAt("2025-03-14T12:30:00Z")}, deadline: "2025-03-14T12:40:00Z"},
		{name: "a stamp of this teardown: kept", stamp: "2025-03-14T12:30:10Z", from: "2025-03-14T12:30:00Z",
			deadline: "2025-03-14T12:40:10Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := cm("x", nil, nil)
			if tc.stamp != "" {
				item = cm("x", stamped(tc.stamp), inLimbo)
			}
			h := newHarness(t, item)
			set := softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{h.item(t, "x", false, "n1", 0)},
				NotBefore: at(tc.from), CountFrom: at(tc.from)}
			out := h.engine.ProcessItems(context.Background(), bundle(), set)
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if !reflect.DeepEqual(h.calls, tc.want) {
				t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, tc.want)
			}
			if len(out.Pending) != 1 || out.Pending[0].DeleteAfter == nil || !out.Pending[0].DeleteAfter.Time.Equal(at(tc.deadline)) {
				t.Errorf("pending = %+v, want one entry due at %s", out.Pending, tc.deadline)
			}
		})
	}
}

// bundleNamed is a Bundle that exists: the owner of items in limbo for one of
// its resources.
func bundleNamed(namespace, name string) *limbov1alpha1.Bundle {
	b := bundle()
	b.Namespace, b.Name, b.UID = namespace, name, types.UID("uid-"+name)
	return b
}

// An item in limbo for a plugin resource whose Bundle is gone (its teardown's
// cancel refused, its finalizer removed by hand, its namespace deleted) is no
// longer left to it, for good: the set decides it as its own. An orphan's
// countdown starts again under the set's owner (the gone owner's stamp, long
// due, is not the set's); a desired one is taken out of limbo. Items of an
// owner whose Bundle exists, or cannot be read, stay left to it.
func TestProcessItemsOwnerGone(t *testing.T) {
	gone := map[string]string{delayKey: "10m", stampKey: "2025-03-14T10:00:00Z", ownerKey: "ops/nr/node-removal"}
	live := map[string]string{delayKey: "10m", stampKey: "2025-03-14T10:00:00Z", ownerKey: "team-b/x/node-removal"}
	pending := map[string]string{pendingKey: "true"}
	h := newHarness(t, cm("orphan", gone, pending), cm("desired", gone, pending), cm("theirs", live, pending), bundleNamed("team-b", "x"))
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "orphan", false, "n1", 0), h.item(t, "desired", true, "n1", 0), h.item(t, "theirs", false, "n1", 0)}})
	want := []string{
		`PATCH ConfigMap team-a/desired application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":null,"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},"resourceVersion":"999"}}`,
		`PATCH ConfigMap team-a/orphan application/merge-patch+json {"metadata":{"annotations":{"limbo.dev/deletionDelay":"10m","limbo.dev/deletionTimestamp":"2025-03-14T12:30:45Z","limbo.dev/pluginResource":"team-a/shop/node-removal"},"labels":{"limbo.dev/pending-deletion":"true"},"resourceVersion":"999"}}`,
	}
	if !reflect.DeepEqual(h.calls, want) {
		t.Errorf("API calls:\n%q\nwant:\n%q", h.calls, want)
	}
	if out.Err != nil {
		t.Errorf("outcome = %+v", out)
	}
	if got := messages(out.Pending); len(got) != 2 || !strings.Contains(got["theirs"], "left to it") || got["orphan"] != "" {
		t.Errorf("pending = %q, want the orphan's new countdown and theirs left to it", got)
	}

	// A live owner is read once a minute at most, not at every pass: theirs,
	// decided again, costs no read.
	reads := 0
	h.engine.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind == "Bundle" {
			reads++
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", Items: []softdelete.Item{h.item(t, "theirs", false, "n1", 0)}})
	if reads != 0 {
		t.Errorf("%d reads of a live owner read a moment before, want none", reads)
	}

	// The owner's Bundle cannot be read: left to it, nothing written.
	h = newHarness(t, cm("orphan", gone, pending))
	h.engine.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewServiceUnavailable("etcd leader changed")
	}})
	out = h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "orphan", false, "n1", 0)}})
	if len(h.calls) != 0 {
		t.Errorf("API calls %q with the owner unreadable, want none", h.calls)
	}
	if got := messages(out.Pending); !strings.Contains(got["orphan"], "left to it") {
		t.Errorf("pending = %q, want the orphan left to its owner", got)
	}
}

// An object a Bundle manages (its limbo.dev/bundle label, or a Bundle its
// controller) is its Bundle's to decide, never a plugin's item: a plugin whose
// inventory covers the namespace (every PVC a Pod mounts is desired) listed
// one of them as desired and its cancel took the Bundle's countdown and its
// delay away — the next pass deleted it at once; listed as an orphan, its
// delay was overwritten with the resource's. Neither is written, nor listed.
// In another cluster a Bundle's label names none of this one's, and the items
// are decided as always.
func TestProcessItemsLeaveABundlesObjects(t *testing.T) {
	inLimbo := map[string]string{delayKey: "24h", stampKey: "2025-03-14T12:00:00Z"}
	controlled := cm("controlled", nil, nil)
	controlled.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "uid-web", Controller: ptr.To(true)}})
	h := newHarness(t, cm("data", inLimbo, map[string]string{pendingKey: "true", bundleKey: "web"}),
		cm("config", map[string]string{delayKey: "1h"}, map[string]string{bundleKey: "web"}), controlled)
	out := h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", LeaveBundlesObjects: true,
		Items: []softdelete.Item{h.item(t, "data", true, "n1", 0), h.item(t, "config", false, "n1", 0), h.item(t, "controlled", false, "n1", 0)}})
	if len(h.calls) != 0 {
		t.Errorf("API calls %q, want none", h.calls)
	}
	// No entry: listed, kubectl limbo pending showed the Bundle's live object
	// as in limbo, under the plugin's Bundle.
	if len(out.Pending) != 0 {
		t.Errorf("pending = %+v, want none", out.Pending)
	}
	if ev := h.events(); len(ev) != 0 {
		t.Errorf("events %q, want none", ev)
	}
	if live := h.live(t, "data").GetAnnotations(); live[delayKey] != "24h" || live[stampKey] == "" {
		t.Errorf("the Bundle's object in limbo was changed: %v", live)
	}

	// A teardown deletes what it lists (deorbit aimed at limbo's own cluster),
	// whoever manages it — but a Bundle that lives on: it would make the object
	// again, or cancel the countdown, at every pass.
	deleting := bundleNamed("team-a", "going")
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: now}, []string{limbov1alpha1.FinalizerTeardown}
	h = newHarness(t, cm("config", map[string]string{delayKey: "1h"}, map[string]string{bundleKey: "web"}),
		cm("gone", nil, map[string]string{bundleKey: "gone"}), cm("going", nil, map[string]string{bundleKey: "going"}),
		bundleNamed("team-a", "web"), deleting)
	out = h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
		Items: []softdelete.Item{h.item(t, "config", false, "n1", 0), h.item(t, "gone", false, "n1", 0), h.item(t, "going", false, "n1", 0)}})
	var stamped []string
	for _, c := range h.calls {
		stamped = append(stamped, strings.Fields(c)[2])
	}
	if !slices.Equal(stamped, []string{"team-a/going", "team-a/gone"}) {
		t.Errorf("a teardown's calls %q, want the stamps of the objects of Bundles gone or going, not of web's", h.calls)
	}
	if got := messages(out.Pending); got["config"] != "" {
		t.Errorf("pending = %q, want no entry of web's config", got)
	}

	// The Bundle cannot be read (a timeout, a 429, a 5xx): it may live on, and
	// its object is left to it. Taken for an orphan, a teardown without a delay
	// deleted the living Bundle's object at once.
	h = newHarness(t, cm("config", map[string]string{delayKey: "1h"}, map[string]string{bundleKey: "web"}), bundleNamed("team-a", "web"))
	var reads []string
	h.engine.Reader = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind == "Bundle" {
			reads = append(reads, key.String())
			return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	out = h.engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner,
		Items: []softdelete.Item{h.item(t, "config", false, "n1", 0)}})
	if !slices.Equal(reads, []string{"team-a/web"}) {
		t.Errorf("reads of Bundles %q, want web's", reads)
	}
	if len(h.calls) != 0 {
		t.Errorf("a teardown's calls %q with web unreadable, want none", h.calls)
	}
	if len(out.Pending) != 0 || out.Remaining != 0 {
		t.Errorf("pending = %+v, remaining %d; want no entry of web's config", out.Pending, out.Remaining)
	}
	if ev := h.events(); len(ev) != 0 {
		t.Errorf("events %q, want none", ev)
	}
	if h.get(t, "config") == nil {
		t.Error("web's config was deleted")
	}

	remote := newHarness(t, cm("config", map[string]string{delayKey: "1h"}, map[string]string{bundleKey: "web"}))
	out = newHarness(t).engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m", LeaveBundlesObjects: true,
		Cluster: &softdelete.Cluster{Name: "workload-kubeconfig", Client: remote.client},
		Items:   []softdelete.Item{remote.item(t, "config", false, "n1", 0)}})
	if len(remote.calls) != 1 || !strings.HasPrefix(remote.calls[0], "PATCH ConfigMap team-a/config") {
		t.Errorf("calls to the other cluster %q, want its stamp", remote.calls)
	}
}

// A plugin's cancel of an object a Bundle manages (stamped by a plugin before
// the engine left such objects to their Bundle) takes limbo's marks away but
// not the delay, which may be the object's own: its Bundle reads it when it
// orphans it, and without it deleted it at once. In another cluster a Bundle's
// label names none of this one's: the delay is limbo's, and goes with the marks.
func TestCancelItemKeepsABundlesObjectsDelay(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cluster   bool   // an item of another cluster, desired again in its plugin's pass
		wantDelay string // "": removed
	}{
		{name: "in this cluster: the delay stays", wantDelay: "24h"},
		{name: "in another cluster: the delay goes", cluster: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cm("data", map[string]string{delayKey: "24h", stampKey: "2025-03-14T12:00:00Z", ownerKey: owner},
				map[string]string{pendingKey: "true", bundleKey: "web"}))
			if tc.cluster {
				out := newHarness(t).engine.ProcessItems(context.Background(), bundle(), softdelete.ItemSet{Owner: owner, Delay: "10m",
					Cluster: &softdelete.Cluster{Name: "workload-kubeconfig", Client: h.client},
					Items:   []softdelete.Item{h.item(t, "data", true, "n1", 0)}})
				if out.Err != nil {
					t.Fatal(out.Err)
				}
			} else if err := h.engine.CancelItem(context.Background(), bundle(), h.live(t, "data"), "resource left"); err != nil {
				t.Fatal(err)
			}
			live := h.live(t, "data")
			if delay, ok := live.GetAnnotations()[delayKey]; delay != tc.wantDelay || ok != (tc.wantDelay != "") {
				t.Errorf("annotations %v: delay %q, want %q", live.GetAnnotations(), delay, tc.wantDelay)
			}
			if _, ok := live.GetAnnotations()[ownerKey]; ok {
				t.Errorf("annotations %v: the plugin's owner is still there", live.GetAnnotations())
			}
			if _, ok := live.GetLabels()[pendingKey]; ok {
				t.Errorf("labels %v: still in limbo", live.GetLabels())
			}
		})
	}
}
