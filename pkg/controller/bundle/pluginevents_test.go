package bundle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// recordingQueue records the calls that queue a request.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request] // nil: other calls panic
	calls                                                   []string
}

func (q *recordingQueue) Add(req reconcile.Request) {
	q.calls = append(q.calls, "Add "+req.Name)
}

// after records a timer of the pacer, and runs it at once: its Add is
// recorded next.
func (q *recordingQueue) after(d time.Duration, f func()) {
	q.calls = append(q.calls, fmt.Sprintf("after %v:", d))
	f()
}

// The passes that a plugin's watched kinds bring come at most once per
// interval per Bundle: the first event at once, the rest of the interval as one
// pass at its end (the pacer's timer), and nothing for an event the timer's
// pass will see.
func TestPluginEventPacer(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	type event struct {
		at     time.Duration // after t0
		bundle string
	}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		events   []event
		want     []string
	}{
		{
			name: "the first event at once", interval: 5 * time.Second,
			events: []event{{0, "a"}},
			want:   []string{"Add a"},
		},
		{
			name: "a burst within the interval: one pass at its end", interval: 5 * time.Second,
			events: []event{{0, "a"}, {time.Second, "a"}, {2 * time.Second, "a"}, {4900 * time.Millisecond, "a"}},
			want:   []string{"Add a", "after 4s:", "Add a"},
		},
		{
			name: "events after the queued pass's instant: the interval after it", interval: 5 * time.Second,
			events: []event{{0, "a"}, {time.Second, "a"}, {6 * time.Second, "a"}, {7 * time.Second, "a"}},
			want:   []string{"Add a", "after 4s:", "Add a", "after 4s:", "Add a"},
		},
		{
			name: "a quiet interval: at once again", interval: 5 * time.Second,
			events: []event{{0, "a"}, {5 * time.Second, "a"}, {20 * time.Second, "a"}},
			want:   []string{"Add a", "Add a", "Add a"},
		},
		{
			name: "each Bundle its own interval", interval: 5 * time.Second,
			events: []event{{0, "a"}, {time.Second, "b"}, {2 * time.Second, "a"}, {3 * time.Second, "b"}},
			want:   []string{"Add a", "Add b", "after 3s:", "Add a", "after 3s:", "Add b"},
		},
		{
			name: "no interval: every event at once", interval: 0,
			events: []event{{0, "a"}, {time.Millisecond, "a"}, {2 * time.Millisecond, "a"}},
			want:   []string{"Add a", "Add a", "Add a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPluginEventPacer(tc.interval)
			q := &recordingQueue{}
			p.afterFunc = q.after
			for _, e := range tc.events {
				p.now = func() time.Time { return t0.Add(e.at) }
				p.enqueue(q, req(e.bundle))
			}
			if !slices.Equal(q.calls, tc.want) {
				t.Errorf("calls:\n%q\nwant:\n%q", q.calls, tc.want)
			}
		})
	}
}

// A Bundle whose last paced pass is an interval old is forgotten, so that the
// pacer holds the Bundles with recent events only, not every Bundle it ever saw.
func TestPluginEventPacerForgetsQuietBundles(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := newPluginEventPacer(5 * time.Second)
	q := &recordingQueue{}
	for i := range 100 {
		p.now = func() time.Time { return t0 }
		p.enqueue(q, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}})
	}
	p.now = func() time.Time { return t0.Add(6 * time.Second) }
	p.enqueue(q, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "new"}})
	if len(p.last) != 1 {
		t.Errorf("the pacer holds %d Bundles, want 1 (the one of the last event)", len(p.last))
	}
}

// The paced pass at the end of an interval comes whatever the queue held when
// it was asked for. The controller's priority queue merges an AddAfter into an
// Add of the same Bundle that is still waiting for a worker: paced with
// AddAfter, the event that came just after the first (a Node deleted just
// after its Csibmnode was labelled) ran no pass of its own, and the events
// during the pass that followed were left to a pass that would never come.
func TestPluginEventPacerPassAfterAMergedAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("test")
		defer q.ShutDown()
		p := newPluginEventPacer(5 * time.Second)
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "nodes"}}

		p.enqueue(q, req)  // the Csibmnode labelled: queued at once
		p.enqueue(q, req)  // the Node deleted, within the interval
		item, _ := q.Get() // the pass starts, before the deletion's event is in its cache
		p.enqueue(q, req)  // a later event, during the pass
		q.Done(item)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if q.Len() != 1 {
			t.Fatalf("%d Bundles queued at the end of the interval, want the one of the events after its pass began", q.Len())
		}
	})
}

// The paced handler maps each event once per Bundle, and drops the informer's
// resync (an update that changes nothing): the Bundles' own resync runs each of
// them, where every Node, Namespace and Tombstone of the cluster ran them again.
func TestPluginEventPacerHandler(t *testing.T) {
	bundle := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "nodes"}}}
	}
	node := func(rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name  string
		event func(handler.EventHandler, workqueue.TypedRateLimitingInterface[reconcile.Request])
		want  []string
	}{
		{"an update", func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: node("1"), ObjectNew: node("2")}, q)
		}, []string{"Add nodes"}},
		{"the resync", func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: node("2"), ObjectNew: node("2")}, q)
		}, nil},
		{"a create", func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: node("1")}, q)
		}, []string{"Add nodes"}},
		{"a delete", func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: node("1")}, q)
		}, []string{"Add nodes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &recordingQueue{}
			tc.event(newPluginEventPacer(5*time.Second).handler(bundle), q)
			if !slices.Equal(q.calls, tc.want) {
				t.Errorf("calls = %q, want %q", q.calls, tc.want)
			}
		})
	}
}

// A Tombstone's events go to the Bundle that controls it, as
// controller-runtime's Owns sent them.
func TestBundleOfTombstone(t *testing.T) {
	ref := func(apiVersion, kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "shop", UID: "b", Controller: &controller}
	}
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   []reconcile.Request
	}{
		{"its Bundle", []metav1.OwnerReference{ref("limbo.dev/v1alpha1", "Bundle", true)},
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "shop"}}}},
		{"a Bundle that is no controller", []metav1.OwnerReference{ref("limbo.dev/v1alpha1", "Bundle", false)}, nil},
		{"a Bundle of another group", []metav1.OwnerReference{ref("other.example.com/v1", "Bundle", true)}, nil},
		{"another kind", []metav1.OwnerReference{ref("limbo.dev/v1alpha1", "Tombstone", true)}, nil},
		{"no owner", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t", OwnerReferences: tc.owners}}
			if got := bundleOfTombstone(context.Background(), ts); !slices.Equal(got, tc.want) {
				t.Errorf("requests = %v, want %v", got, tc.want)
			}
		})
	}
}

// The timer's pass stands for every event of its interval, and comes at an
// ordinary event's priority: begun by the events of an informer's initial
// listing, which controller-runtime queues at a low priority, it carried that
// priority to a deleted Node's pass, which then waited behind the start-up pass
// of every Bundle.
func TestPluginEventPacerTimerPassAtNormalPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("test")
		defer q.ShutDown()
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "nodes"}}
		h := newPluginEventPacer(5 * time.Second).handler(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{req} })
		node := func(name string) *corev1.Node {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
		}

		h.Create(context.Background(), event.CreateEvent{Object: node("w1"), IsInInitialList: true}, q) // at once, low
		h.Create(context.Background(), event.CreateEvent{Object: node("w2"), IsInInitialList: true}, q) // the timer
		if item, priority, _ := q.GetWithPriority(); priority != handler.LowPriority {
			t.Fatalf("the first pass, of the initial listing: %v at priority %d, want %d", item, priority, handler.LowPriority)
		} else {
			q.Done(item)
		}
		h.Delete(context.Background(), event.DeleteEvent{Object: node("w3")}, q) // the timer's pass sees it
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if q.Len() != 1 {
			t.Fatalf("%d Bundles queued at the end of the interval, want 1", q.Len())
		}
		if _, priority, _ := q.GetWithPriority(); priority != 0 {
			t.Errorf("the timer's pass, which the Node's deletion waits for, at priority %d, want 0", priority)
		}
	})
}
