package tombstone

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// externalDeletes runs external deletes beside the Tombstone workers, the way
// the Bundle controller runs plans and teardowns: the worker that starts a
// delete waits for it up to plugin.CallWait; one that outlasts that finishes in
// the background (under plugin.CallTimeout), is kept, and triggers its
// Tombstone, whose next reconcile records it. So a backend that hangs never
// holds a worker, and the deletes of other backends go on.
//
// Each plugin resource (a Bundle's resource: one backend and its credentials)
// has at most perResource deletes running at a time (not counting calls
// plugin.WithTimeout abandoned for ignoring their context), so that a backend
// that is slow but alive is never sent a herd. A Tombstone that finds no free turn
// queues; a turn that frees wakes the first in the queue, and a woken Tombstone
// that does not take the turn (cancelled meanwhile, or no longer due) passes it
// on to the next, so that a free turn never waits for a requeue.
type externalDeletes struct {
	// done is told of the Tombstones to reconcile again: a delete of theirs
	// finished in the background, or a turn of their resource freed.
	done chan<- event.GenericEvent
	// await waits up to wait for a delete to finish (plugin.AwaitCall).
	await       func(ctx context.Context, finished <-chan struct{}, wait time.Duration) bool
	wait        time.Duration
	perResource int

	mu      sync.Mutex
	calls   map[types.NamespacedName]*deleteCall
	running map[resourceKey]int
	// queued are the Tombstones that found no free turn, by resource, in order.
	queued map[resourceKey][]types.NamespacedName
	// woken are the Tombstones a freed turn was offered to, and its resource.
	woken map[types.NamespacedName]resourceKey
}

// resourceKey is a plugin resource: namespace, Bundle and resource name.
type resourceKey struct{ namespace, bundle, resource string }

func resourceOf(ts *limbov1alpha1.Tombstone) resourceKey {
	return resourceKey{namespace: ts.Namespace, bundle: ts.Labels[limbov1alpha1.LabelBundle], resource: ts.Spec.Resource}
}

// deleteCall is one Tombstone's delete, running or finished and not yet
// recorded.
type deleteCall struct {
	// uid is the Tombstone's the delete is for: a Tombstone re-created under
	// the name is another.
	uid types.UID
	// tombstone is that Tombstone as the delete began, for the record of a
	// delete that ended after its cancel (recordFinished).
	tombstone *limbov1alpha1.Tombstone
	// attempt is the status.attempts the attempt marker wrote for this delete.
	attempt  int32
	err      error
	finished chan struct{}
	// notify: the worker stopped waiting, so the end triggers the Tombstone.
	notify bool
}

func newExternalDeletes(done chan<- event.GenericEvent, perResource int) *externalDeletes {
	return &externalDeletes{done: done, wait: plugin.CallWait, await: plugin.AwaitCall, perResource: max(perResource, 1),
		calls: map[types.NamespacedName]*deleteCall{}, running: map[resourceKey]int{},
		queued: map[resourceKey][]types.NamespacedName{}, woken: map[types.NamespacedName]resourceKey{}}
}

// pending returns the delete of ts's name that runs (running) or finished and
// is not yet recorded — ts's, or a predecessor's (call.uid says) — ok is false
// when there is none. A finished one is handed over once: the caller records it.
func (d *externalDeletes) pending(ts *limbov1alpha1.Tombstone) (call *deleteCall, running, ok bool) {
	key := types.NamespacedName{Namespace: ts.Namespace, Name: ts.Name}
	d.mu.Lock()
	defer d.mu.Unlock()
	call, ok = d.calls[key]
	if !ok {
		return nil, false, false
	}
	select {
	case <-call.finished:
	default:
		// The worker that started it stopped waiting (a Tombstone is never
		// reconciled twice at once), so its end triggers the Tombstone.
		return call, true, true
	}
	delete(d.calls, key)
	return call, false, true
}

// reserve takes a turn of ts's resource for a delete; false when every turn is
// taken: ts is queued, and woken when a turn frees.
func (d *externalDeletes) reserve(ts *limbov1alpha1.Tombstone) bool {
	return d.turnFree(ts, true)
}

// busy reports whether every turn of ts's resource is taken, as reserve would
// find it; ts is then queued as reserve queues it, and woken when a turn frees.
func (d *externalDeletes) busy(ts *limbov1alpha1.Tombstone) bool {
	return !d.turnFree(ts, false)
}

// turnFree reports whether a turn of ts's resource is free, and takes it if
// take; when none is, ts is queued, and woken when a turn frees.
func (d *externalDeletes) turnFree(ts *limbov1alpha1.Tombstone, take bool) bool {
	key, res := types.NamespacedName{Namespace: ts.Namespace, Name: ts.Name}, resourceOf(ts)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[res] < d.perResource {
		if take {
			delete(d.woken, key)
			d.running[res]++
		}
		return true
	}
	delete(d.woken, key)
	if !slices.Contains(d.queued[res], key) {
		d.queued[res] = append(d.queued[res], key)
	}
	return false
}

// release gives a turn of ts's resource back, unused.
func (d *externalDeletes) release(ts *limbov1alpha1.Tombstone) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.releaseLocked(resourceOf(ts))
}

func (d *externalDeletes) releaseLocked(res resourceKey) {
	if d.running[res]--; d.running[res] <= 0 {
		delete(d.running, res)
	}
	d.wakeNext(res)
}

// reconciled is told that a reconcile of key ended: if key was offered a turn
// and did not take it, the next in the queue is.
func (d *externalDeletes) reconciled(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if res, ok := d.woken[key]; ok {
		delete(d.woken, key)
		d.wakeNext(res)
	}
}

// wakeNext offers a free turn of res to the first queued Tombstone. The caller
// holds the lock.
func (d *externalDeletes) wakeNext(res resourceKey) {
	if d.running[res] >= d.perResource || len(d.queued[res]) == 0 {
		return
	}
	key := d.queued[res][0]
	if d.queued[res] = d.queued[res][1:]; len(d.queued[res]) == 0 {
		delete(d.queued, res)
	}
	d.woken[key] = res
	d.trigger(key)
}

// start runs del for ts on a turn reserve took, as attempt number attempt, and
// waits for it up to the wait. finished says whether it did: err is its error.
// Otherwise it goes on in the background, and its end triggers ts.
func (d *externalDeletes) start(ctx context.Context, ts *limbov1alpha1.Tombstone, attempt int32, del func(context.Context) error) (finished bool, err error) {
	key := types.NamespacedName{Namespace: ts.Namespace, Name: ts.Name}
	res := resourceOf(ts)
	call := &deleteCall{uid: ts.UID, tombstone: ts.DeepCopy(), attempt: attempt, finished: make(chan struct{})}
	d.mu.Lock()
	d.calls[key] = call
	d.mu.Unlock()
	go func() {
		// ctx is the pass's, the controller's until the manager stops: the delete
		// outlives the pass, not the manager (see bundle's backgroundCalls.run). A
		// panic of the plugin is recovered by plugin.WithTimeout as the delete's
		// error (logged with its stack), retried like any: this goroutine is
		// outside controller-runtime's recovery, and the process would end.
		_, err := plugin.WithTimeout(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, del(ctx) })
		d.mu.Lock()
		defer d.mu.Unlock()
		call.err = err
		close(call.finished)
		d.releaseLocked(res)
		if call.notify {
			d.trigger(key)
		}
	}()

	finished = d.await(ctx, call.finished, d.wait)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !finished {
		select {
		case <-call.finished:
			// It ended after the wait, before this lock: it found nobody to
			// trigger, so it is this worker's to record.
		default:
			call.notify = true
			return false, nil
		}
	}
	delete(d.calls, key)
	return true, call.err
}

// forget drops the record of a Tombstone that is gone, and returns its delete
// if one finished unrecorded (nil otherwise): the caller records it.
func (d *externalDeletes) forget(key types.NamespacedName) *deleteCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	if call, ok := d.calls[key]; ok {
		select {
		case <-call.finished:
			delete(d.calls, key)
			return call
		default: // running: its end triggers the name, which is forgotten then
		}
	}
	return nil
}

// trigger queues key's Tombstone; if the trigger is dropped, the fallback
// requeue of a Tombstone that waits for a delete or a turn (plugin.CallTimeout)
// remains. The caller holds the lock.
func (d *externalDeletes) trigger(key types.NamespacedName) {
	plugin.Trigger(d.done, &limbov1alpha1.Tombstone{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
}
