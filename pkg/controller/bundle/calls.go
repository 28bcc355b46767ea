package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// backgroundCalls runs plugin calls of one kind (plans, teardowns) beside the
// passes. At most one call per plugin resource runs at a time (a poll never
// overlaps the previous one), but for a call plugin.WithTimeout abandoned for
// ignoring its context, which runs on beside the next. The pass that starts a call waits for it up to
// plugin.CallWait; a call that outlasts that finishes in the background, is kept, and
// triggers its Bundle, whose next pass takes it. A pass that finds a call still
// running does not wait at all.
type backgroundCalls[T any] struct {
	// done is told of the Bundle of every call that finished in the background.
	done chan<- event.GenericEvent
	// wait is how long the pass that starts a call waits for it (plugin.CallWait).
	wait time.Duration
	// forget is told the Bundle UID and resource of a call whose state was
	// forgotten while it ran — bundleGone: the Bundle went; else the resource
	// left its spec —: the call may have left state in its plugin after the
	// reconciler had the plugins forget it. Nil: nobody.
	forget func(uid types.UID, resource string, bundleGone bool)
	// clock tells the time (clock.RealClock; tests set another).
	clock clock.PassiveClock

	mu    sync.Mutex
	calls map[callKey]*callState[T]
}

// unreadMaxAge is how long a finished call stays current while no pass takes
// it. Its end triggers the Bundle, whose next pass takes it within moments; one
// left unread longer was left by passes that did not ask (its resource Blocked
// on a dependency, or failing before the call): what it saw then is the last
// known state, not the truth to decide items on.
const unreadMaxAge = time.Minute

type callKey struct {
	bundle   types.NamespacedName
	uid      types.UID
	resource string
}

type callState[T any] struct {
	// inputHash is the hash of the running or last call's input; resultHash
	// that of the input of result.
	inputHash, resultHash [32]byte
	running               bool
	// result and err are the last finished call; unread reports that no pass took
	// it yet; seen that some pass did (so the resource's last known state exists).
	result T
	err    error
	unread bool
	seen   bool
	// finishedAt is when the last call finished (unreadMaxAge).
	finishedAt time.Time
	// notify: a pass stopped waiting for the running call, so its end must
	// trigger the Bundle.
	notify bool
	// finished closes when the running call finishes.
	finished chan struct{}
	// gone: the state was forgotten (dropped from calls), and why.
	gone callGone
}

// callGone says why a call's state was forgotten.
type callGone int

const (
	callLive callGone = iota
	// callResourceGone: the resource left its Bundle's spec.
	callResourceGone
	// callBundleGone: the Bundle is gone.
	callBundleGone
)

// callOutcome is what a pass gets for a plugin resource.
type callOutcome[T any] struct {
	result T
	err    error
	// current: the result comes from a call of the current input that no pass has
	// taken yet, so it is the truth to act on. Otherwise it is the last known
	// state, and known says whether there is one (none while the first call runs);
	// stale, that it is of another input (the spec changed and the call of the new
	// one is still running): it tells nothing of what the current input makes.
	current, known, stale bool
}

// callInput is the input of a call (backgroundCalls.call) made of parts, a
// plugin's name first: NUL-separated, so that no two lists of parts give the
// same bytes.
func callInput(parts ...[]byte) []byte {
	return bytes.Join(parts, []byte{0})
}

func newBackgroundCalls[T any](done chan<- event.GenericEvent, forget func(uid types.UID, resource string, bundleGone bool)) *backgroundCalls[T] {
	return &backgroundCalls[T]{done: done, wait: plugin.CallWait, forget: forget, clock: clock.RealClock{}, calls: map[callKey]*callState[T]{}}
}

// call returns the outcome of the call of b's plugin resource on input: one that
// finished since the last pass, or a new one (run by call) if it finishes within
// the wait, or else the last known state. A new call gets its own copy of b: the
// pass goes on with b while the call may still run.
func (c *backgroundCalls[T]) call(ctx context.Context, b *limbov1alpha1.Bundle, resource string, input []byte, call func(context.Context, *limbov1alpha1.Bundle) (T, error)) callOutcome[T] {
	key := callKey{bundle: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, uid: b.UID, resource: resource}
	hash := sha256.Sum256(input)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.calls[key]
	if st == nil {
		st = &callState[T]{}
		c.calls[key] = st
	}
	if st.unread && st.inputHash == hash && c.clock.Since(st.finishedAt) <= unreadMaxAge {
		return st.take(hash)
	}
	if st.running { // started by an earlier pass: its end triggers the Bundle
		st.notify = true
		return st.lastKnown(hash)
	}
	if st.unread {
		// A finished call of another input (the spec changed since), or one
		// left unread past unreadMaxAge, is only the last known state: were it
		// still unread when the new call's wait ends, it would be taken as the
		// new call's result.
		st.unread, st.seen = false, true
	}
	st.running, st.inputHash, st.finished = true, hash, make(chan struct{})
	finished := st.finished
	go c.run(ctx, key, st, b.DeepCopy(), call, finished)
	c.mu.Unlock()

	plugin.AwaitCall(ctx, finished, c.wait)
	c.mu.Lock()
	if st.unread { // finished
		return st.take(hash)
	}
	st.notify = true
	return st.lastKnown(hash)
}

// take hands the finished call to a pass; it is current only for the input's
// hash. The caller holds the lock.
func (st *callState[T]) take(hash [32]byte) callOutcome[T] {
	st.unread, st.seen, st.notify = false, true, false
	return callOutcome[T]{result: st.result, err: st.err, current: st.inputHash == hash, known: true}
}

// lastKnown is the last call a pass took, if any, for a pass whose input's hash
// is hash. The caller holds the lock.
func (st *callState[T]) lastKnown(hash [32]byte) callOutcome[T] {
	if !st.seen {
		return callOutcome[T]{}
	}
	return callOutcome[T]{result: st.result, err: st.err, known: true, stale: st.resultHash != hash}
}

// run calls in the background, under plugin.CallTimeout, and keeps the result. ctx
// is the pass's: controller-runtime derives it from the controller's and cancels it
// only when the manager stops (limbo sets no ReconciliationTimeout), so a call
// outlives the pass that started it but not the manager. This goroutine is outside
// controller-runtime's recovery of panics: a panic of the plugin's code is
// recovered here (plugin.WithTimeout, plugin.Recover) as the call's error, logged
// with its stack, so that it fails its resource (PluginFailed, or the teardown's
// DeletionFailure) instead of the controller's process.
func (c *backgroundCalls[T]) run(ctx context.Context, key callKey, st *callState[T], b *limbov1alpha1.Bundle, call func(context.Context, *limbov1alpha1.Bundle) (T, error), finished chan struct{}) {
	result, err := plugin.WithTimeout(ctx, func(ctx context.Context) (T, error) { return call(ctx, b) })
	c.mu.Lock()
	if gone := st.gone; gone != callLive {
		// The resource may be back in the spec since (a new call of it made a
		// new state): what the plugins keep of it is that call's now.
		_, back := c.calls[key]
		c.mu.Unlock()
		if c.forget != nil && !back { // the plugins' Forget methods: plugin code too
			_ = plugin.Recover(ctx, func() { c.forget(key.uid, key.resource, gone == callBundleGone) })
		}
		return
	}
	st.result, st.err, st.unread, st.running, st.finishedAt = result, err, true, false, c.clock.Now()
	st.resultHash = st.inputHash // one call runs at a time: the input it started with
	notify := st.notify
	close(finished)
	c.mu.Unlock()
	if !notify {
		return // the pass that waited takes it
	}
	plugin.Trigger(c.done, b) // if dropped, the resync and the poll interval remain
}

// forgetRemoved drops the calls of the resources of the Bundle named name whose
// UID is uid that are not in keep (they left its spec), and returns their names.
func (c *backgroundCalls[T]) forgetRemoved(name types.NamespacedName, uid types.UID, keep map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var removed []string
	for key := range c.calls {
		if st := c.calls[key]; key.bundle == name && key.uid == uid && !keep[key.resource] {
			st.gone = callResourceGone
			delete(c.calls, key)
			removed = append(removed, key.resource)
		}
	}
	return removed
}

// forgetBundle drops the calls of a Bundle that is gone, and returns the UIDs
// they were made for (one Bundle of the name, or more if it was re-created).
func (c *backgroundCalls[T]) forgetBundle(name types.NamespacedName) []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var uids []types.UID
	for key := range c.calls {
		if key.bundle == name {
			c.calls[key].gone = callBundleGone
			delete(c.calls, key)
			if !slices.Contains(uids, key.uid) {
				uids = append(uids, key.uid)
			}
		}
	}
	return uids
}

// forgetPluginState has the plugins drop their state of a Bundle resource whose
// call ended after the state was forgotten: of the whole Bundle when it is gone.
func (r *Reconciler) forgetPluginState(uid types.UID, resource string, bundleGone bool) {
	if bundleGone {
		r.Plugins.ForgetBundle(uid)
		return
	}
	r.Plugins.ForgetResource(uid, resource)
}
