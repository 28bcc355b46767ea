package bundle

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultPluginEventInterval is the shortest time between two passes of a
// Bundle that events of a plugin's watched kinds bring (--plugin-event-interval).
const DefaultPluginEventInterval = 5 * time.Second

// pluginEventPacer paces the passes that the events of a plugin's watched
// kinds bring: a Bundle's first such event after a quiet interval queues it at
// once, later ones within the interval queue one pass at its end, which sees
// them all. A plugin watches kinds it does not manage (node-removal every Node
// and csi-baremetal resource, namespace-gc every Namespace); on a cluster of
// 1,000 Nodes their status updates come several times a second, and a pass per
// event kept a core planning, to find the same inventory. A Bundle's
// Tombstones' events are paced too: they only report progress (attempts,
// errors, gone), and each brought a pass that planned again, several a second
// in a mass deletion. A Bundle's own events, its objects' and its deadlines
// are not paced: they carry a user's change or a deadline.
type pluginEventPacer struct {
	// interval is the shortest time between two paced passes of a Bundle; 0
	// paces nothing.
	interval time.Duration
	now      func() time.Time
	// afterFunc runs f after d (time.AfterFunc): the paced pass at the end of
	// an interval is the pacer's timer, not the queue's AddAfter, which the
	// priority queue merges into an earlier Add of the same Bundle — that pass
	// starts before the events it was meant for, and they were lost.
	afterFunc func(d time.Duration, f func())

	mu sync.Mutex
	// last is when each Bundle's last paced pass was queued for: now, or the
	// end of an interval, later than now while its timer waits.
	last map[types.NamespacedName]time.Time
	// swept is when last was last rid of entries older than the interval.
	swept time.Time
}

func newPluginEventPacer(interval time.Duration) *pluginEventPacer {
	return &pluginEventPacer{interval: interval, now: time.Now, last: map[types.NamespacedName]time.Time{},
		afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// enqueue queues req's pass now, at the end of the interval since its last
// paced pass, or not at all when the pass the timer queues later will see the
// event.
func (p *pluginEventPacer) enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], req reconcile.Request) {
	if p.interval <= 0 {
		q.Add(req)
		return
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(now)
	last, ok := p.last[req.NamespacedName]
	switch next := last.Add(p.interval); {
	case !ok || !now.Before(next):
		p.last[req.NamespacedName] = now
		q.Add(req)
	case last.After(now):
		// The timer queues a pass after this event: it sees it.
	default:
		p.last[req.NamespacedName] = next
		p.afterFunc(next.Sub(now), func() { addAtNormalPriority(q, req) })
	}
}

// sweep forgets, at most once per interval, the Bundles whose last paced pass
// is an interval old or more: their next event queues a pass at once anyway.
func (p *pluginEventPacer) sweep(now time.Time) {
	if now.Sub(p.swept) < p.interval {
		return
	}
	p.swept = now
	for key, last := range p.last {
		if !now.Before(last.Add(p.interval)) {
			delete(p.last, key)
		}
	}
}

// handler maps every event through bundles, as
// handler.EnqueueRequestsFromMapFunc does, and queues each Bundle through the
// pacer; it drops the resync's updates.
func (p *pluginEventPacer) handler(bundles handler.MapFunc) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		seen := map[reconcile.Request]bool{}
		for _, obj := range objs {
			for _, req := range bundles(ctx, obj) {
				if !seen[req] {
					seen[req] = true
					p.enqueue(q, req)
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
				// The informer's periodic resync, nothing changed: the Bundles'
				// own resync (the same --resync-period) runs each of them, once,
				// not once per Node, Namespace and Tombstone.
				return
			}
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// addAtNormalPriority queues req at the priority of an ordinary event. The
// queue a handler is given adds at a low priority for the events of an
// informer's initial listing (controller-runtime's handler.Funcs): the timer's
// pass stands for every event of its interval, a deleted Node's included,
// and at a low priority it waited behind every Bundle's start-up pass.
func addAtNormalPriority(q workqueue.TypedRateLimitingInterface[reconcile.Request], req reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, req)
		return
	}
	q.Add(req)
}
