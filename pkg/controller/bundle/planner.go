package bundle

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// planWait is how long a pass waits for a plugin's plan before it goes on with
// the plugin's last known state: a slow or hanging plugin (up to
// plugin.CallTimeout) never delays another resource's deadline.
const planWait = 2 * time.Second

// planner runs plugin plans beside the passes. At most one plan per plugin
// resource runs at a time (a poll never overlaps the previous one); a plan that
// outlasts planWait finishes in the background, is kept, and triggers its Bundle,
// whose next pass takes it.
type planner struct {
	// done is told of the Bundle of every plan that finished in the background.
	done chan<- event.GenericEvent
	// wait is how long a pass waits for a plan (planWait).
	wait time.Duration

	mu    sync.Mutex
	plans map[planKey]*planState
}

type planKey struct {
	bundle   types.NamespacedName
	uid      types.UID
	resource string
}

type planState struct {
	specHash [32]byte
	running  bool
	// result and err are the last finished plan; unread reports that no pass took
	// it yet; seen that some pass did (so the resource's last known state exists).
	result *plugin.Result
	err    error
	unread bool
	seen   bool
	// notify: a pass stopped waiting for the running plan, so its end must
	// trigger the Bundle.
	notify bool
	// finished closes when the running plan finishes.
	finished chan struct{}
}

// planOutcome is what a pass gets for a plugin resource.
type planOutcome struct {
	result *plugin.Result
	err    error
	// current: the result comes from a plan of the current spec that no pass has
	// taken yet, so its inventory is the truth to act on. Otherwise the result is
	// the last known state (for readiness), or nil while the first plan runs.
	current bool
}

func newPlanner(done chan<- event.GenericEvent) *planner {
	return &planner{done: done, wait: planWait, plans: map[planKey]*planState{}}
}

// plan returns the plugin resource's plan: one that finished since the last pass,
// or a new one if it finishes within planWait, or else the last known state.
func (pl *planner) plan(ctx context.Context, b *limbov1alpha1.Bundle, plug plugin.Plugin, req plugin.Request) planOutcome {
	key := planKey{bundle: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, uid: b.UID, resource: req.Resource}
	hash := sha256.Sum256(req.Spec)
	pl.mu.Lock()
	st := pl.plans[key]
	if st == nil {
		st = &planState{}
		pl.plans[key] = st
	}
	if st.unread && st.specHash == hash {
		pl.mu.Unlock()
		return pl.take(key, hash)
	}
	if !st.running {
		st.running, st.specHash, st.finished = true, hash, make(chan struct{})
		go pl.run(key, b, plug, req, st.finished)
	}
	finished := st.finished
	pl.mu.Unlock()

	timer := time.NewTimer(pl.wait)
	defer timer.Stop()
	select {
	case <-finished:
		return pl.take(key, hash)
	case <-timer.C:
	case <-ctx.Done():
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if st.unread { // finished just now
		st.unread, st.seen, st.notify = false, true, false
		return planOutcome{result: st.result, err: st.err, current: st.specHash == hash}
	}
	st.notify = true
	if st.seen {
		return planOutcome{result: st.result, err: st.err}
	}
	return planOutcome{}
}

// take hands the finished plan to a pass; it is current only for the spec hash.
func (pl *planner) take(key planKey, hash [32]byte) planOutcome {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	st := pl.plans[key]
	out := planOutcome{result: st.result, err: st.err, current: st.specHash == hash}
	st.unread, st.seen, st.notify = false, true, false
	return out
}

// run plans in the background, under plugin.CallTimeout but not under the pass's
// context, and keeps the result.
func (pl *planner) run(key planKey, b *limbov1alpha1.Bundle, plug plugin.Plugin, req plugin.Request, finished chan struct{}) {
	result, err := plugin.WithTimeout(context.Background(), func(ctx context.Context) (*plugin.Result, error) { return plug.Plan(ctx, req) })
	pl.mu.Lock()
	st, ok := pl.plans[key]
	if !ok { // the Bundle is gone
		pl.mu.Unlock()
		return
	}
	st.result, st.err, st.unread, st.running = result, err, true, false
	notify := st.notify
	close(finished)
	pl.mu.Unlock()
	if !notify {
		return // the pass that waited takes it
	}
	select {
	case pl.done <- event.GenericEvent{Object: b}:
	default:
		// The channel is full: a trigger for some Bundle is queued; the periodic
		// resync and the poll interval are the safety net.
	}
}

// forgetBundle drops the plans of a Bundle that is gone.
func (pl *planner) forgetBundle(name types.NamespacedName) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for key := range pl.plans {
		if key.bundle == name {
			delete(pl.plans, key)
		}
	}
}
