package bundle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/apiwarning"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/fanout"
	"github.com/limbo-dev/limbo/pkg/invalidcauses"
	"github.com/limbo-dev/limbo/pkg/readiness"
	"github.com/limbo-dev/limbo/pkg/reference"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// pass is one reconcile of one Bundle: it validates the spec, processes every
// resource in dependency order and hands orphans to the soft-delete engine. Its
// outputs are the resource states, the pending deletions and when to come back.
type pass struct {
	// Inputs.
	r      *Reconciler
	bundle *limbov1alpha1.Bundle

	// Intermediate state.
	plan     *bundlespec.Plan
	specErrs bundlespec.Errors
	live     map[string]*unstructured.Unstructured // by resource name, after apply
	declared map[string]string                     // objectKey of every object the spec declares or a plugin generated -> its resource
	// gone: objectKey of the orphans this pass found gone (deleted, or already).
	gone map[string]bool
	// staleDeclared: what generators whose plan of a changed spec still runs
	// made with the previous spec (declareStale), declared for the orphan
	// decisions only.
	staleDeclared map[string]string
	// idleGenerators: the plugin resources this pass processed that acted on no
	// plan (Blocked, failed, still at their first plan): what they generated
	// before stays theirs (heldByIdleGenerator).
	idleGenerators map[string]bool
	plugins        []pluginOutcome                  // plugin inventories, processed with the orphans
	kinds          map[schema.GroupVersionKind]bool // every kind the Bundle's objects have, generated ones included
	// keptKinds stay in status.managedKinds though the pass found nothing of
	// them: the API server could not tell (decideUnseenOrphans).
	keptKinds []schema.GroupVersionKind
	adopters  *adopters // the adopters of the orphans handed over
	// resourceUIDs are the UIDs of the objects of the pass's resources
	// (heldByAResource), and lastResources the resources that last declared
	// the objects of the previous status (orphanAll): each built at its first
	// use, by a step that runs alone, and looked up for every orphan.
	resourceUIDs  map[string]bool
	lastResources lastResources

	// Outputs.
	resources []limbov1alpha1.ResourceStatus
	states    map[string]limbov1alpha1.ResourceState
	pending   []limbov1alpha1.PendingDeletion
	// orphansUndecided says why this pass decided nothing about the orphans
	// (their listing failed): its status says Reconciling, retried, however
	// Ready its resources are.
	orphansUndecided string
	// unlisted counts the entries in limbo that a previous status kept by
	// keepPreviousPending counted but did not list (MaxPendingDeletionsListed).
	unlisted int32
	// requeueAt is when to come back (zero: never). It is a time, not a
	// duration: the rest of the pass (its status write) must not push a deadline
	// back by its own length.
	requeueAt time.Time
	// deadlineAt is the earliest countdown's end among requeueAt's requests
	// (zero: none): a failed pass keeps it (Reconciler.alarms), not its retries,
	// which back off with the error.
	deadlineAt time.Time
	// quick: the pass asked to come back within conflictRetry (quickRetries).
	quick bool
	// errs are transient failures (reads, writes, plugin calls): the pass
	// returns them to the work queue, whose rate limiter backs off.
	errs []error
	// emptyGuard is set when an empty spec would have deleted what the Bundle
	// manages: nothing is deleted (spec.allowEmpty).
	emptyGuard bool
	// shardCheck asks the API server, once, whether the Bundle is still this
	// shard's (see stillInShard); left is its answer: the Bundle left (or
	// changed), and the pass writes nothing more, not its status either.
	shardCheck sync.Once
	left       bool
	// announcements are the pass's events on its Bundle, held until the pass
	// ends (emitAnnouncements): they announce what it did and what its status
	// says, and a pass that writes no status — the Bundle left the shard —
	// announces nothing (a stale shard's InvalidSpec of a spec the user fixed
	// in the moving write would mislead).
	announcements []announcement

	// mu guards requeueAt, deadlineAt, errs and announcements, which the
	// concurrent applies of a wave set.
	mu sync.Mutex
}

// announcement is an event of a pass on its Bundle.
type announcement struct{ eventType, reason, message string }

func newPass(r *Reconciler, b *limbov1alpha1.Bundle) *pass {
	return &pass{r: r, bundle: b, live: map[string]*unstructured.Unstructured{}, declared: map[string]string{}, staleDeclared: map[string]string{}, idleGenerators: map[string]bool{}, gone: map[string]bool{},
		kinds: map[schema.GroupVersionKind]bool{}, states: map[string]limbov1alpha1.ResourceState{}, adopters: r.adopters(b)}
}

// after asks to come back within d (the earliest request wins).
func (p *pass) after(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requeueAt = softdelete.Earliest(p.requeueAt, p.r.Clock.Now().Add(d))
	p.quick = p.quick || d <= conflictRetry
}

// atDeadline asks to come back at the end of a countdown, at; unlike other
// requeues it is kept by a pass that fails (the alarm).
func (p *pass) atDeadline(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requeueAt, p.deadlineAt = softdelete.Earliest(p.requeueAt, at), softdelete.Earliest(p.deadlineAt, at)
}

// fail records a transient error: the work queue retries the Bundle with backoff.
func (p *pass) fail(err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.errs = append(p.errs, err)
	}
}

// failUndecided records err, a listing that failed, as fail does, and as why
// this pass decided nothing about the orphans (orphansUndecided).
func (p *pass) failUndecided(err error) {
	p.fail(err)
	p.orphansUndecided = err.Error()
}

// announce holds an event on the Bundle until the pass ends.
func (p *pass) announce(eventType, reason, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.announcements = append(p.announcements, announcement{eventType, reason, fmt.Sprintf(format, args...)})
}

// emitAnnouncements emits the events the pass held, in the order it made them.
func (p *pass) emitAnnouncements() {
	for _, a := range p.announcements {
		p.r.Recorder.Event(p.bundle, a.eventType, a.reason, a.message)
	}
	p.announcements = nil
}

// readLive reads the live object gvk ns/name (nil: none; fresh: from the API
// server, see getLive), its kind watched first. A failure is the pass's
// (fail), and its error says which step failed.
func (p *pass) readLive(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, fresh bool) (*unstructured.Unstructured, error) {
	if err := p.r.watcher.ensure(ctx, gvk); err != nil {
		p.fail(err)
		return nil, fmt.Errorf("watch %s: %w", gvk.Kind, err)
	}
	live, err := p.r.getLive(ctx, gvk, namespace, name, fresh)
	if err != nil {
		p.fail(err)
		return nil, err
	}
	return live, nil
}

func (p *pass) result() ctrl.Result {
	return p.requeueTo(p.requeueAt)
}

// paced is result for the nth quick retry in a row (quickRetries): past
// maxQuickRetries, the retry comes later and later, but never after the
// pass's earliest countdown's end.
func (p *pass) paced(n int) ctrl.Result {
	if n <= maxQuickRetries {
		return p.result()
	}
	return p.requeueTo(softdelete.Earliest(p.r.Clock.Now().Add(quickRetryWait(n)), p.deadlineAt))
}

// failedResult is the result of a pass that failed: only its deadline, for the
// alarm; its retries are the work queue's backoff.
func (p *pass) failedResult() ctrl.Result {
	return p.requeueTo(p.deadlineAt)
}

func (p *pass) requeueTo(at time.Time) ctrl.Result {
	if !at.IsZero() {
		// A requeue is a deadline (or a retry): served before event-driven passes,
		// so that a burst of events does not make a deletion late. RequeueAfter 0
		// would mean "never": a time already past is at once.
		d := max(at.Sub(p.r.Clock.Now()), time.Millisecond)
		return ctrl.Result{RequeueAfter: d, Priority: ptr.To(10)}
	}
	return ctrl.Result{}
}

// run is one pass, phase by phase: plan (validate the spec), apply every
// resource in dependency order (plugins plan here and their generated objects
// are applied), then decide orphans — the Bundle's objects, then its plugins'
// items — with the soft-delete engine. The caller writes status.
func (p *pass) run(ctx context.Context) {
	if !p.planSpec(ctx) {
		return
	}
	p.apply(ctx)
	if ready, listed := p.decideObjectOrphans(ctx); listed {
		p.decidePluginItems(ctx, ready)
		p.decideUnseenOrphans(ctx, ready)
	}
}

// planSpec validates the spec and records what it declares. On spec errors it
// reports them, touches nothing but to cancel Tombstones of removed plugin
// resources (cancelling is always safe), and returns false.
func (p *pass) planSpec(ctx context.Context) bool {
	p.plan, p.specErrs = bundlespec.Parse(p.bundle, p.r.Mapper, p.r.Plugins)
	if len(p.specErrs) > 0 {
		p.reportSpecErrors()
		p.cancelTombstonesOfRemovedResources(ctx)
		return false
	}
	maps.Copy(p.declared, p.plan.Objects)
	plugins := map[string]bool{}
	for name, res := range p.plan.Resources {
		if res.Template != nil {
			p.kinds[res.GVK] = true
		} else {
			plugins[name] = true
		}
	}
	// A plugin resource that left the spec leaves nothing in memory: its
	// calls, and its plugin's state of it (a gauge series of it included).
	for _, resource := range p.r.plans.forgetRemoved(client.ObjectKeyFromObject(p.bundle), p.bundle.UID, plugins) {
		p.r.Plugins.ForgetResource(p.bundle.UID, resource)
	}
	return true
}

// apply brings every resource to its desired state, in dependency order: wave
// by wave, the object resources of a wave (whose dependencies are all in earlier
// waves) concurrently, at most Reconciler.ApplyConcurrency at a time, then its
// plugin resources one by one. Status and events list resources in plan order
// whatever order the writes finish in.
func (p *pass) apply(ctx context.Context) {
	statuses := make([]limbov1alpha1.ResourceStatus, len(p.plan.Order))
	changes := make([][]*appliedChange, len(p.plan.Order))
	for _, wave := range waves(p.plan) {
		lives := make([]*unstructured.Unstructured, len(wave)) // by position in the wave
		p.concurrently(len(wave), func(k int) {
			i := wave[k]
			res := p.plan.Resources[p.plan.Order[i]]
			if res.Object == nil {
				return
			}
			out := p.syncObject(ctx, res, p.unreadyDependencies(res.Name))
			statuses[i], lives[k] = out.status, out.live
			if out.change != nil {
				changes[i] = []*appliedChange{out.change}
			}
		})
		for k, i := range wave {
			name := p.plan.Order[i]
			if res := p.plan.Resources[name]; res.Object == nil {
				statuses[i], changes[i] = p.syncPlugin(ctx, res)
			} else if lives[k] != nil {
				p.live[name] = lives[k]
			}
		}
		for _, i := range wave {
			p.states[p.plan.Order[i]] = statuses[i].State
		}
	}
	// What the spec no longer declares is no longer looked for. A generator
	// that did not plan in this pass declares nothing: what it found in the
	// way is forgotten too, and found again, once, when it plans.
	p.r.inTheWay.keepDeclared(p.bundle, p.declared, p.staleDeclared)
	boundResourceMessages(statuses)
	p.resources = statuses
	var all []*appliedChange
	for _, c := range changes {
		all = append(all, c...)
	}
	p.emitAppliedEvent(all)
	p.emitResourceEvents()
}

// concurrently calls do(i) for every i in [0, n), at most
// Reconciler.ApplyConcurrency at a time (below 1 counts as 1), and returns when
// every call has. Each call writes its results into its own slot of a slice, which
// the caller folds in order afterwards; of the pass's own state, calls only read,
// or record through the locked after and fail.
func (p *pass) concurrently(n int, do func(i int)) {
	fanout.Each(p.r.ApplyConcurrency, n, do)
}

// waves groups plan.Order's indices by dependency depth: wave 0 holds the
// resources without dependencies, wave k those whose deepest dependency is in wave
// k-1. Each wave keeps plan order.
func waves(plan *bundlespec.Plan) [][]int {
	depth := make(map[string]int, len(plan.Order))
	var out [][]int
	for i, name := range plan.Order { // dependencies first
		d := 0
		for _, dep := range plan.Graph.Dependencies(name) {
			d = max(d, depth[dep]+1)
		}
		depth[name] = d
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], i)
	}
	return out
}

// reportSpecErrors marks every resource: the offending ones Error, the others not
// processed. Nothing is written and nothing is deleted.
func (p *pass) reportSpecErrors() {
	byResource := map[string][]string{}
	reason := map[string]string{}
	for _, e := range p.specErrs {
		byResource[e.Resource] = append(byResource[e.Resource], e.Message)
		if reason[e.Resource] == "" {
			reason[e.Resource] = e.Reason
		}
	}
	// The object each resource's status recorded stays: a teardown finds there
	// the object of a template it cannot read far enough to name it
	// (teardownWaves), and the object is still the resource's.
	recorded := map[string]*limbov1alpha1.ObjectReference{}
	for _, st := range p.bundle.Status.Resources {
		recorded[st.Name] = st.Object
	}
	seen := map[string]bool{}
	for _, r := range p.bundle.Spec.Resources {
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		st := limbov1alpha1.ResourceStatus{Name: r.Name, State: limbov1alpha1.ResourceBlocked, Reason: limbov1alpha1.ReasonInvalidSpec, Message: "not processed: the Bundle's spec is invalid"}
		if msgs := byResource[r.Name]; len(msgs) > 0 {
			st = limbov1alpha1.ResourceStatus{Name: r.Name, State: limbov1alpha1.ResourceError, Reason: reason[r.Name], Message: bundlespec.JoinBounded(msgs, "; ")}
		}
		st.Object = recorded[r.Name].DeepCopy()
		p.resources = append(p.resources, st)
	}
	boundResourceMessages(p.resources)
	// Announced once: a pass of the same broken spec finds it in the condition.
	if !p.sameAsBefore(limbov1alpha1.ReasonInvalidSpec, invalidSpecMessage(p.specErrs)) {
		p.announce(corev1.EventTypeWarning, limbov1alpha1.ReasonInvalidSpec, "%s", p.specErrs.Error())
	}
	// Keep what is already in limbo visible while the spec is broken.
	p.keepPreviousPending()
}

// keepPreviousPending keeps what the status last written has in limbo, for a
// pass that could not judge all of it (a spec error, a failed listing): the
// entries it lists that this pass did not produce, visible still and looked for
// again by the next pass; and, when it did not list them all, the count (and, in
// managedKinds, the kinds) of the rest, so that the status stays cut as long as
// there is more than it lists (itemLookup looks for those by kind).
func (p *pass) keepPreviousPending() {
	produced := map[string]bool{}
	for _, pd := range p.pending {
		produced[pendingKey(pd)] = true
	}
	prev := &p.bundle.Status
	for _, pd := range prev.PendingDeletions {
		if !produced[pendingKey(pd)] {
			p.pending = append(p.pending, pd)
		}
	}
	if prev.PendingDeletionsCut() {
		p.unlisted = max(0, prev.PendingDeletionCount-int32(len(p.pending)))
	}
}

// sameAsBefore reports whether the Bundle's Stalled condition already says msg.
func (p *pass) sameAsBefore(reason, msg string) bool {
	for _, c := range p.bundle.Status.Conditions {
		if c.Type == limbov1alpha1.ConditionStalled && c.Reason == reason && c.Message == msg {
			return true
		}
	}
	return false
}

// syncObject syncs an object resource; waiting are its dependencies that are not
// Ready. It may run concurrently with the other object resources of its wave.
func (p *pass) syncObject(ctx context.Context, res *bundlespec.Resource, waiting []string) objectResult {
	return p.syncOne(ctx, res.Name, res.Template, res.Adopt, waiting, func() (*unstructured.Unstructured, error) {
		content, err := p.resolve(ctx, res.References, res.Template.Object)
		if err != nil {
			return nil, err
		}
		return p.own(&unstructured.Unstructured{Object: content})
	})
}

// objectResult is what syncing one object produced: its status, the live object
// (nil when there is none, or it is not the Bundle's) and the write made, if any.
type objectResult struct {
	status limbov1alpha1.ResourceStatus
	live   *unstructured.Unstructured
	change *appliedChange
}

// syncOne brings one object to its desired state: it checks who owns the live
// object, cancels a countdown, waits for dependencies (waiting), applies what build
// returns unless the live object already holds it, and reports readiness.
//
// The live object is read from the cache, which holds the objects labelled with a
// Bundle. One that is not there is created with a create-only apply (see
// createOnlyVersion): the API server creates it if it does not exist, and refuses
// with a Conflict if it does, so an object limbo does not manage is never written;
// only then is it read from the API server and judged by the adoption rules.
func (p *pass) syncOne(ctx context.Context, name string, tmpl *unstructured.Unstructured, adopt bool, waiting []string,
	build func() (*unstructured.Unstructured, error)) (out objectResult) {
	gvk := tmpl.GroupVersionKind()
	key := objectKey(tmpl)
	// The outcome is what the next pass knows of this object: in the way or
	// not. A failure before the object was judged (a read) forgets it: found
	// again, it costs one refused create.
	defer func() { p.r.inTheWay.record(p.bundle, key, foundInTheWay(out.status)) }()
	out = objectResult{status: limbov1alpha1.ResourceStatus{Name: name, Object: &limbov1alpha1.ObjectReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: tmpl.GetNamespace(), Name: tmpl.GetName(),
	}}}
	st := &out.status
	fail := func(state limbov1alpha1.ResourceState, reason, format string, args ...any) objectResult {
		st.State, st.Reason, st.Message = state, reason, fmt.Sprintf(format, args...)
		out.live = nil
		return out
	}
	// A write for a Bundle that left the shard, or changed, since the cache
	// showed it (stillInShard) is not made: the pass ends without a status.
	left := func() objectResult {
		return fail(limbov1alpha1.ResourceInProgress, limbov1alpha1.ReasonProgressing, "the Bundle changed or left this controller's shard; the next pass decides")
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("resource", name))
	// What the API server says about a Secret may quote its values: its
	// warnings are not logged, and neither they nor its errors are passed on as
	// they are (withholdSecretText).
	isSecret := reference.IsSecret(tmpl.Object)
	if isSecret {
		ctx = apiwarning.Quiet(ctx)
	}
	ctx, warnings := apiwarning.Collect(ctx)
	defer p.passOnWarnings(name, isSecret, warnings)
	// A blocked resource writes nothing, so only a read tells whether an object
	// it is not allowed to take is in its way. One found in the way before is
	// read too: the create-only apply below would find it as well, but as a
	// write the API server refuses, at every pass while it stays (each
	// recheck, each event of the Bundle's).
	fresh := len(waiting) > 0 || p.wasInTheWay(name, key)
	live, err := p.readLive(ctx, gvk, tmpl.GetNamespace(), tmpl.GetName(), fresh)
	if err != nil {
		return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonReadFailed, "%v", err)
	}
	var desired *unstructured.Unstructured
	var hash string
	// declared is the delay of the object as built (a generated object's is
	// its plugin resource's deletionDelay, not in the template), read before
	// a write puts the API server's answer in desired.
	declared := ""
	if live == nil && len(waiting) == 0 {
		if desired, err = build(); err != nil {
			state, reason, message := referenceFailure(err)
			return fail(state, reason, "%s", message)
		}
		hash = hashOf(desired)
		declared = desired.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]
		if !p.stillInShard(ctx) {
			return left()
		}
		created, err := p.r.createOnly(ctx, desired, p.plan.Referenced(name))
		switch {
		case err != nil:
			return p.applyFailed(ctx, &out, desired, err)
		case created:
			p.r.applied.record(desired, hash, "")
			st.AppliedDigest = appliedDigest(hash, desired)
			out.change = p.changed(ctx, name, desired, limbov1alpha1.EventCreated)
			return p.delayKept(declared, desired, p.ready(ctx, out, desired))
		}
		// Something of that name exists that the cache does not hold: read it
		// and judge it like any live object.
		if live, err = p.r.getFresh(ctx, gvk, tmpl.GetNamespace(), tmpl.GetName()); err != nil {
			p.fail(err)
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonReadFailed, "%v", err)
		}
		if live == nil { // gone again in between: decide on the next pass
			p.after(conflictRetry)
			return fail(limbov1alpha1.ResourceInProgress, limbov1alpha1.ReasonReadFailed, "%s %q existed a moment ago and is gone; checking again", gvk.Kind, tmpl.GetName())
		}
	}
	adopting, cancelOnAdoption := false, false
	if live != nil {
		st.Object.UID = string(live.GetUID())
		switch owner := metav1.GetControllerOf(live); {
		case owner != nil && owner.UID == p.bundle.UID:
		case owner != nil:
			p.after(conflictRecheckInterval)
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonControlledByOther, "%s %q exists and is controlled by %s %q", gvk.Kind, tmpl.GetName(), owner.Kind, owner.Name)
		case live.GetLabels()[limbov1alpha1.LabelBundle] == p.bundle.Name, adopt:
			adopting = true
		default:
			p.after(conflictRecheckInterval)
			return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonNotOwned,
				"%s %q exists and is not managed by this Bundle; annotate the template with %s: \"true\" to adopt it", gvk.Kind, tmpl.GetName(), limbov1alpha1.AnnotationAdopt)
		}
		if live.GetDeletionTimestamp() != nil {
			p.after(teardownInterval)
			return fail(limbov1alpha1.ResourceDeleting, limbov1alpha1.ReasonBeingDeleted, "%s %q is being deleted; it is re-created once it is gone", gvk.Kind, tmpl.GetName())
		}
		// Desired again: a countdown in progress is cancelled at once, even while
		// the resource waits for its dependencies — except that of an object it
		// adopts (one a teardown released), which goes once the object is
		// controlled (below).
		cancelOnAdoption = adopting
		if !cancelOnAdoption && p.r.Engine.InLimbo(live) && !p.stillInShard(ctx) {
			return left()
		}
		if !cancelOnAdoption {
			if err := p.cancel(ctx, live, isSecret); err != nil {
				return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonApplyFailed, "%v", err)
			}
		}
	}
	// Not applied this pass, the Bundle's object still gets the delay its
	// template declares: a removal that follows is decided on the live one.
	notApplied := func() {
		if live != nil && !adopting {
			p.keepDeclaredDelay(ctx, tmpl.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay], live)
		}
	}
	if len(waiting) > 0 {
		notApplied()
		return fail(limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonDependenciesNotReady, "%s", blockedMessage(waiting))
	}
	if desired == nil {
		if desired, err = build(); err != nil {
			notApplied()
			state, reason, message := referenceFailure(err)
			return fail(state, reason, "%s", message)
		}
		hash = hashOf(desired)
		declared = desired.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]
	}
	// Here live is the Bundle's, or one it adopts.
	if !adopting {
		p.r.applied.seed(live, hash, func() string { return p.recordedDigest(name) })
	}
	if adopting || !p.r.applied.upToDate(live, hash) {
		event := limbov1alpha1.EventUpdated
		if adopting {
			event = limbov1alpha1.EventAdopted
		}
		// Drift put back counts once the apply succeeded (a refused one puts
		// nothing back, and its retries are no fight); the writers are read
		// before the apply takes their fields back.
		drifted, now, writers := !adopting && p.r.applied.drifted(live, hash), p.r.Clock.Now(), []string(nil)
		if drifted && p.r.applied.drift.due(live.GetUID(), now) {
			writers = p.r.recentWriters(ctx, gvk, live.GetNamespace(), live.GetName(), now)
		}
		if !p.stillInShard(ctx) {
			return left()
		}
		if adopting {
			// Adopted only as it was read: another Bundle adopting it at the
			// same moment (under the same field manager, whose apply would drop
			// the other's owner reference) or a delete and re-create since makes
			// this a Conflict, decided again on the next read.
			desired.SetResourceVersion(live.GetResourceVersion())
		}
		if err := p.r.apply(ctx, desired, p.plan.Referenced(name)); err != nil {
			if adopting && apiconflict.Is(err) {
				p.after(conflictRetry)
				return fail(limbov1alpha1.ResourceInProgress, limbov1alpha1.ReasonProgressing, "%s %q changed since it was read for its adoption; checking again", gvk.Kind, tmpl.GetName())
			}
			notApplied()
			return p.applyFailed(ctx, &out, desired, err)
		}
		if err := p.intoShard(ctx, desired); err != nil {
			p.fail(err)
		}
		keptDropped := true
		if _, declared := tmpl.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; !declared {
			done, err := p.r.Engine.DropKeptDelay(ctx, desired)
			p.fail(withholdSecretText(isSecret, err))
			keptDropped = done
		}
		if drifted {
			if n, warn := p.r.applied.drift.corrected(live.GetUID(), now); warn {
				p.warnDrift(name, live, gvk.Kind, n, writers)
			}
		}
		p.r.applied.record(desired, hash, live.GetResourceVersion())
		st.AppliedDigest = appliedDigest(hash, desired)
		if !keptDropped {
			// Applied again by the next pass, whose answer shows the kept
			// delay still: up to date, the object would keep it. Nor does the
			// status vouch for this copy, which a restart would take for
			// applied.
			p.r.applied.invalidate(desired.GetUID())
			st.AppliedDigest = ""
			p.after(conflictRetry)
		}
		// An apply the API server answered with the live version changed
		// nothing (the first pass after a start applies again every object
		// the status does not vouch for: appliedCache.seed): nothing to
		// announce.
		if adopting || desired.GetResourceVersion() != live.GetResourceVersion() {
			out.change = p.changed(ctx, name, desired, event)
		}
		// Controlled now, the adopted object's countdown goes. Cancelled before,
		// an object that nothing controls and that carries no mark of limbo's
		// is left behind for good if this Bundle never adopts it (it drops the
		// object, or goes, while the resource waits); and labelled with this
		// Bundle's name it looks like one the garbage collector orphaned — the
		// evidence of a --cascade=orphan delete (cascade.go): a background
		// delete of this Bundle would have left its objects behind. Until then
		// the reaper leaves it to this Bundle, which declares it.
		if cancelOnAdoption {
			if err := p.cancel(ctx, live, isSecret); err != nil {
				return fail(limbov1alpha1.ResourceError, limbov1alpha1.ReasonApplyFailed, "%v", err)
			}
		}
		out = p.delayKept(declared, desired, p.ready(ctx, out, desired))
		p.r.applied.judge(desired, out.status, p.plan.Referenced(name))
		return out
	}
	if judged, ok := p.r.applied.superseded(live); ok {
		// Readiness judged on the copy limbo's apply replaced would let the
		// dependents go ahead, and open the orphan gate, on the previous
		// generation's status; and references would read its old values. The
		// pass that applied judged the API server's answer: that stands until
		// the cache catches up (judging "not known yet" instead made Ready
		// flap, and the status be written twice, at every drift corrected; the
		// Bundle's status would not do: its write may have failed). The watch
		// event of the applied copy brings the next pass; the requeue is in
		// case it was missed.
		p.after(supersededRecheck)
		out.live = live
		if judged == nil {
			st.State, st.Reason = limbov1alpha1.ResourceInProgress, readiness.ReasonLatestGenerationNotObserved
			st.Message = fmt.Sprintf("waiting for the cache to show %s %q as last applied", gvk.Kind, tmpl.GetName())
			return out
		}
		st.State, st.Reason, st.Message = judged.state, judged.reason, judged.message
		if judged.live != nil {
			out.live = judged.live
		}
		return out
	}
	st.AppliedDigest = appliedDigest(hash, live)
	return p.delayKept(declared, live, p.ready(ctx, out, live))
}

// delayKept checks out, the resource judged on live — the API server's answer
// to limbo's write, or the copy found up to date — against declared, the
// delay of the object limbo built. An admission webhook or policy that removes limbo.dev/deletionDelay
// (or shortens it) leaves an object that removing its resource deletes sooner
// than its author declared — without a delay, at once — while the Bundle
// reported it Ready. The resource is an Error that says so instead, and the
// pass fails, to be retried with backoff and apply again: a policy that acts
// on creation only lets the next apply, an update, put the delay on.
func (p *pass) delayKept(declared string, live *unstructured.Unstructured, out objectResult) objectResult {
	if out.live == nil || !softdelete.Lengthens(live.GetAnnotations(), declared) {
		return out
	}
	st := &out.status
	st.State, st.Reason = limbov1alpha1.ResourceError, limbov1alpha1.ReasonDeletionDelayNotKept
	if have, ok := live.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; ok {
		st.Message = fmt.Sprintf("%s %q has %s %q, shorter than the %q its template declares: an admission webhook or policy changed what limbo wrote, and removing this resource would delete the object %s after it leaves the Bundle",
			live.GetKind(), live.GetName(), limbov1alpha1.AnnotationDeletionDelay, have, declared, have)
	} else {
		st.Message = fmt.Sprintf("%s %q has no %s, though its template declares %q: an admission webhook or policy removed it from what limbo wrote, and removing this resource would delete the object at once",
			live.GetKind(), live.GetName(), limbov1alpha1.AnnotationDeletionDelay, declared)
	}
	// Applied again on the retry, not skipped as up to date.
	p.r.applied.invalidate(live.GetUID())
	st.AppliedDigest = ""
	p.fail(fmt.Errorf("resource %q: %s", st.Name, st.Message))
	out.live = nil
	return out
}

// recordedDigest is the appliedDigest the Bundle's status holds for resource
// name ("" if none): what a pass of an earlier process found applied
// (appliedCache.seed), of its object or of a generator's objects (joinDigests).
func (p *pass) recordedDigest(name string) string {
	if st := p.bundle.Status.Resource(name); st != nil {
		return st.AppliedDigest
	}
	return ""
}

// wasInTheWay reports whether the last sync of the object key, which resource
// name declares, found an object that is not the Bundle's where it goes
// (NotOwned, ControlledByOther): as this process remembers it (see
// objectsInTheWay), or, for an object resource, as the status last written
// says (a process before this one found it). Such an object is not labelled,
// so not in the cache.
func (p *pass) wasInTheWay(name, key string) bool {
	if p.r.inTheWay.has(p.bundle, key) {
		return true
	}
	res := p.plan.Resources[name]
	return res != nil && res.Object != nil && statusSaysInTheWay(&p.bundle.Status, name, key)
}

// cancel ends live's countdown, if it has one: it is desired again. The error
// of a Secret's withholds what the API server said (withholdSecretText).
func (p *pass) cancel(ctx context.Context, live *unstructured.Unstructured, isSecret bool) error {
	_, err := p.r.Engine.Desired(ctx, p.bundle, live)
	err = withholdSecretText(isSecret, err)
	if err != nil {
		p.fail(err)
	}
	return err
}

// keepDeclaredDelay writes declared, the delay the spec declares for live,
// the Bundle's object that this pass does not apply (a template's, or its
// generator resource's deletionDelay: declaredGenerated), when it lengthens
// live's countdown (softdelete.Lengthens). Users are told to put a delay on
// before they remove an object; without it, a delay added while the resource
// was Blocked or its apply refused never reached the object, and the removal
// that followed deleted it at once (a teardown, in its wave). A shorter delay,
// or none, waits for the apply: the safe direction.
func (p *pass) keepDeclaredDelay(ctx context.Context, declared string, live *unstructured.Unstructured) {
	if !softdelete.Lengthens(live.GetAnnotations(), declared) || !p.stillInShard(ctx) {
		return
	}
	switch err := p.r.Engine.KeepDelay(ctx, live, declared); {
	case err == nil:
		// Not up to date any more: the apply once the resource may be
		// applied again answers with the kept delay's manager, and
		// DropKeptDelay removes it if the template dropped the delay
		// meanwhile (reverted while Blocked, the apply skipped as up to date,
		// it stayed).
		p.r.applied.invalidate(live.GetUID())
	case holdsTeardown(err): // clears by itself: retried
		p.fail(err)
	default:
		// Refused (a webhook, a schema the stored object no longer meets):
		// retrying changes nothing, and the resource's state already says
		// why it is not applied.
		log.FromContext(ctx).Info("could not write the template's deletion delay on an object its resource did not apply",
			"object", objectKey(live), "error", err.Error())
	}
}

// passOnWarnings makes each warning the API server answered the requests about
// resource name's object with a Warning event on the Bundle: its author would
// have seen them from kubectl (see package apiwarning). The text of a warning
// about a Secret may quote its values (an admission policy's message may print
// anything of the object): it is withheld, and the event only says that there
// were warnings.
func (p *pass) passOnWarnings(name string, isSecret bool, warnings func() []string) {
	texts := warnings()
	if isSecret {
		if len(texts) > 0 {
			p.announce(corev1.EventTypeWarning, limbov1alpha1.EventAPIWarning,
				"resource %q: the API server warns (%d warning(s); their text is withheld: it may quote the Secret's values)", name, len(texts))
		}
		return
	}
	for _, text := range texts {
		p.announce(corev1.EventTypeWarning, limbov1alpha1.EventAPIWarning, "resource %q: the API server warns: %s", name, text)
	}
}

// ready completes out with live's UID and readiness.
func (p *pass) ready(ctx context.Context, out objectResult, live *unstructured.Unstructured) objectResult {
	gvk := live.GroupVersionKind()
	st := &out.status
	st.Object.UID = string(live.GetUID())
	rule, err := p.r.readinessRule(ctx, gvk)
	if err != nil {
		p.fail(err)
		st.State, st.Reason, st.Message = limbov1alpha1.ResourceError, limbov1alpha1.ReasonFailed, fmt.Sprintf("readiness rule of %s: %v", gvk.Kind, err)
		return out
	}
	ready := readiness.Compute(live, rule)
	if class, ok := readiness.PendingClaimClass(live); ok && rule == nil && ready.State == readiness.InProgress && p.r.bindsOnFirstUse(ctx, class) {
		ready = readiness.ClaimWaitsForConsumer(class)
	}
	switch ready.State {
	case readiness.Ready:
		st.State = limbov1alpha1.ResourceReady
	case readiness.Failed:
		st.State, st.Reason = limbov1alpha1.ResourceError, orDefault(ready.Reason, limbov1alpha1.ReasonFailed)
	default:
		st.State, st.Reason = limbov1alpha1.ResourceInProgress, ready.Reason
	}
	st.Message = ready.Message
	out.live = live
	return out
}

// untypablePatch starts the API server's answer to an apply that the kind's
// schema cannot type (a field the kind does not have, a list where it has a
// string): a 500 without a reason (apimachinery's managedfields, which returns
// a plain error), though no retry can change it. limbo reads it as Invalid.
const untypablePatch = "failed to create typed patch object"

// applyFailed reports a failed apply of desired: back to the work queue, whose
// rate limiter backs off; a refusal that needs someone's change also makes the
// Bundle Stalled (see status).
//
// For a Secret, what the API server said is withheld (see withheldError): the
// message of the resource, of the Bundle's conditions and events, and the log
// line keep the reason and the fields named, not the text.
func (p *pass) applyFailed(ctx context.Context, out *objectResult, desired *unstructured.Unstructured, err error) objectResult {
	gvk := desired.GroupVersionKind()
	err = invalidcauses.Sorted(err) // the same refusal, the same message: a re-pass rewrites nothing
	reason := applyFailureReason(err)
	err = fmt.Errorf("apply %s %q: %w", gvk.Kind, desired.GetName(), withholdSecretText(reference.IsSecret(desired.Object), err))
	log.FromContext(ctx).Error(err, "apply failed", "bundle", p.bundle.Namespace+"/"+p.bundle.Name,
		"object", fmt.Sprintf("%s/%s %s/%s", gvk.GroupVersion().String(), gvk.Kind, desired.GetNamespace(), desired.GetName()))
	p.fail(err)
	out.status.State, out.status.Reason, out.status.Message = limbov1alpha1.ResourceError, reason, err.Error()
	out.live = nil
	return *out
}

// applyFailureReason is the resource's reason for a failed apply. Refusals of the
// request as it stands — not allowed, not valid, not even well-formed for the
// kind (a field it does not have) — need someone's change: Forbidden, Invalid,
// BadRequest. Anything else may pass when retried: ApplyFailed.
func applyFailureReason(err error) string {
	switch r := apierrors.ReasonForError(err); {
	case r == metav1.StatusReasonForbidden:
		return limbov1alpha1.ReasonForbidden
	case r == metav1.StatusReasonInvalid, r == metav1.StatusReasonUnknown && strings.Contains(err.Error(), untypablePatch):
		return limbov1alpha1.ReasonInvalid
	case r == metav1.StatusReasonBadRequest:
		return limbov1alpha1.ReasonBadRequest
	}
	return limbov1alpha1.ReasonApplyFailed
}

// changed logs a write of obj for resource and returns it for the pass's event.
func (p *pass) changed(ctx context.Context, resource string, obj *unstructured.Unstructured, event string) *appliedChange {
	c := &appliedChange{resource: resource, kind: obj.GetKind(), name: obj.GetName(), event: event}
	log.FromContext(ctx).V(1).Info("applied", "resource", resource, "object", fmt.Sprintf("%s %s/%s", c.kind, obj.GetNamespace(), c.name), "change", c.verb())
	return c
}

// referenceFailure is the resource's state and reason for err, a failure to
// resolve or substitute its references. A field of a dependency's status that is
// not written yet is waited for: Blocked, as for a dependency that is not Ready.
// Values that would make the object too large need someone's change (a smaller
// value, fewer markers): the Bundle is Stalled. Anything else may clear when the
// referenced object changes: ReferenceError.
func referenceFailure(err error) (limbov1alpha1.ResourceState, string, string) {
	switch {
	case errors.Is(err, reference.ErrStatusNotSet):
		return limbov1alpha1.ResourceBlocked, limbov1alpha1.ReasonValueNotSet, "waiting for a value: " + err.Error()
	case errors.Is(err, reference.ErrTooLarge):
		return limbov1alpha1.ResourceError, limbov1alpha1.ReasonSubstitutionTooLarge, err.Error()
	}
	return limbov1alpha1.ResourceError, limbov1alpha1.ReasonReferenceError, err.Error()
}

// resolve returns content with the values of refs substituted.
func (p *pass) resolve(ctx context.Context, refs []limbov1alpha1.Reference, content map[string]any) (map[string]any, error) {
	sources, err := p.sources(ctx, refs)
	if err != nil {
		return nil, err
	}
	values, err := reference.Resolve(refs, sources, false)
	if err != nil {
		return nil, err
	}
	return reference.Substitute(content, values)
}

// sources are the live objects of this pass that refs read values from, with
// their bodies (see bodies). A failed read of a body is also a transient error of
// the pass.
func (p *pass) sources(ctx context.Context, refs []limbov1alpha1.Reference) (map[string]reference.Source, error) {
	sources := map[string]reference.Source{}
	for _, ref := range refs {
		dep := p.plan.Resources[ref.Resource]
		if ref.Name != "" && dep.Plugin != nil && p.live[ref.Resource] == nil && p.states[ref.Resource] == limbov1alpha1.ResourceReady {
			// A value is read from a generator's first object; a cleanup job
			// (namespace-gc, route-gc, ...) makes none, and "not available yet"
			// would wait for ever.
			return nil, fmt.Errorf("reference %q: plugin resource %q generated no object to read a value from (plugin %q); only a plugin that generates objects can be read, or reference it without a name and path, for order alone",
				ref.Name, ref.Resource, dep.Plugin.Name)
		}
		src := reference.Source{}
		if live := p.live[ref.Resource]; live != nil {
			full, err := p.r.bodies.full(ctx, p.r.APIReader, live)
			if err != nil {
				p.fail(err)
				return nil, err
			}
			src.Object = full.Object
		}
		if dep.Template != nil {
			src.Secret = reference.IsSecret(dep.Template.Object)
		}
		sources[ref.Resource] = src
	}
	return sources, nil
}

// own makes desired what limbo applies: it adds limbo's labels (the Bundle's,
// its shard's) and controller owner reference, and a Secret's stringData goes
// into its data (foldStringData).
func (p *pass) own(desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if err := metadataTyped(desired); err != nil {
		return nil, err
	}
	return p.ownTyped(desired)
}

// ownTyped is own for desired whose metadata metadataTyped accepted.
func (p *pass) ownTyped(desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	foldStringData(desired)
	labels := p.r.Shard.CopyLabels(p.bundle.Labels, desired.GetLabels())
	labels[limbov1alpha1.LabelBundle] = p.bundle.Name
	desired.SetLabels(labels)
	// A template's is a spec error (bundlespec); a generated object's is
	// refused here.
	if o := metav1.GetControllerOfNoCopy(desired); o != nil {
		return nil, fmt.Errorf("the object sets a controller owner reference (%s %q); limbo is the controller of the objects it manages", o.Kind, o.Name)
	}
	desired.SetOwnerReferences(append(desired.GetOwnerReferences(), metav1.OwnerReference{
		APIVersion: limbov1alpha1.GroupVersion.String(), Kind: limbov1alpha1.BundleGVK.Kind,
		Name: p.bundle.Name, UID: p.bundle.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}))
	return desired, nil
}

// metadataTyped refuses obj when its metadata has fields of the wrong type —
// after references were resolved, a label that one filled with a number, say:
// unstructured's getters return no map at all then, and the labels limbo sets
// would silently replace the object's, where the API server would have refused
// the value. The checks are the template's (bundlespec.MetadataTypeErrors: a
// null map is absent); they name keys and types, never values (one may come
// from a Secret).
func metadataTyped(obj *unstructured.Unstructured) error {
	if problems := bundlespec.MetadataTypeErrors(obj.Object); len(problems) > 0 {
		return fmt.Errorf("%s (a reference that resolved to another type?)", strings.Join(problems, "; "))
	}
	return nil
}

// ownGenerated is own for obj, an object the plugin resource res generated as
// the spec declares it (declaredGenerated): it also names that resource
// (AnnotationGeneratedBy), so that a teardown deletes the object in the
// resource's wave.
func (p *pass) ownGenerated(obj *unstructured.Unstructured, res *bundlespec.Resource) (*unstructured.Unstructured, error) {
	if err := metadataTyped(obj); err != nil {
		return nil, err
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[limbov1alpha1.AnnotationGeneratedBy] = res.Name
	obj.SetAnnotations(annotations)
	return p.ownTyped(obj)
}

// declaredGenerated is obj, an object the plugin resource res generated, as
// the spec declares it: with the resource's deletionDelay unless the plugin
// gave the object its own. The delay is "stamped on every orphan the plugin
// finds", and an object it no longer generates is one; the delay of an object
// of the Bundle is read from the live object when it is orphaned (as a
// template's is), so it has to be on the object before then: in what the pass
// applies (ownGenerated), and kept on the object while the pass cannot apply
// it (keepDeclaredDelay).
func declaredGenerated(obj *unstructured.Unstructured, res *bundlespec.Resource) *unstructured.Unstructured {
	if _, own := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; own || res.Plugin.DeletionDelay == "" {
		return obj
	}
	obj = obj.DeepCopy()
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[limbov1alpha1.AnnotationDeletionDelay] = res.Plugin.DeletionDelay
	obj.SetAnnotations(annotations)
	return obj
}

func (p *pass) unreadyDependencies(name string) []string {
	var waiting []string
	for _, dep := range p.plan.Graph.Dependencies(name) {
		if p.states[dep] != limbov1alpha1.ResourceReady {
			waiting = append(waiting, dep)
		}
	}
	return waiting
}

// allReady reports whether every resource is Ready: the gate for deletions.
func (p *pass) allReady() bool {
	if len(p.specErrs) > 0 {
		return false
	}
	for _, st := range p.resources {
		if st.State != limbov1alpha1.ResourceReady {
			return false
		}
	}
	return true
}

// maxResourceEvents is how many resources newly in Error a pass announces one
// by one; one more event names the rest, whose messages are in the status. A
// Bundle of a thousand resources that fail at once (its namespace being
// deleted, a quota) would send a thousand events in one pass: ~20 s of the
// client's budget at QPS 50, with every other Bundle's events queued behind.
const maxResourceEvents = 10

// emitResourceEvents emits a Warning for every resource that newly went into
// Error, named after its reason — up to maxResourceEvents of them, then one
// for the rest: named after their reason if they share one, ResourceError
// otherwise.
func (p *pass) emitResourceEvents() {
	before := map[string]limbov1alpha1.ResourceStatus{}
	for _, st := range p.bundle.Status.Resources {
		before[st.Name] = st
	}
	var rest []limbov1alpha1.ResourceStatus
	announced := 0
	for _, st := range p.resources {
		prev := before[st.Name]
		if st.State != limbov1alpha1.ResourceError || (prev.State == st.State && prev.Reason == st.Reason && prev.Message == st.Message) {
			continue
		}
		if announced < maxResourceEvents {
			p.announce(corev1.EventTypeWarning, st.Reason, "resource %q: %s", st.Name, st.Message)
			announced++
		} else {
			rest = append(rest, st)
		}
	}
	if len(rest) == 0 {
		return
	}
	reason := sharedReason(len(rest), func(i int) string { return rest[i].Reason }, limbov1alpha1.ReasonResourceError)
	names := make([]string, len(rest))
	for i, st := range rest {
		names[i] = strconv.Quote(st.Name)
		if reason == limbov1alpha1.ReasonResourceError {
			names[i] += " (" + st.Reason + ")"
		}
	}
	p.announce(corev1.EventTypeWarning, reason, "%d more resources went into Error: %s; their messages are in the Bundle's status.resources",
		len(rest), bundlespec.JoinBounded(names, ", "))
}

// readinessRule returns the rule a CRD states for its objects, or nil.
func (r *Reconciler) readinessRule(ctx context.Context, gvk schema.GroupVersionKind) (*readiness.Rule, error) {
	if !strings.Contains(gvk.Group, ".") {
		return nil, nil // built-in kinds have no CRD
	}
	mapping, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := r.Client.Get(ctx, client.ObjectKey{Name: mapping.Resource.Resource + "." + gvk.Group}, &crd); err != nil {
		return nil, client.IgnoreNotFound(err) // an aggregated API, not a CRD
	}
	return readiness.RuleFromAnnotations(crd.Annotations)
}

// blockedMessage is the message of a resource Blocked on its dependencies.
func blockedMessage(waiting []string) string {
	return "waiting for " + strings.Join(quoteAll(waiting), ", ")
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// getLive returns the live object from the cache, or nil if the cache has none.
// With orAPIServer, an object the cache does not hold is read from the API
// server (an object limbo may adopt, or that blocks a resource).
func (r *Reconciler) getLive(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, orAPIServer bool) (*unstructured.Unstructured, error) {
	cached := cachedObject(gvk)
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cached)
	switch {
	case apierrors.IsNotFound(err) && orAPIServer:
		return r.getFresh(ctx, gvk, namespace, name)
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s %q: %w", gvk.Kind, name, err)
	}
	return asUnstructured(cached, gvk)
}

// getFresh reads an object from the API server; nil if there is none.
func (r *Reconciler) getFresh(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s %q: %w", gvk.Kind, name, err)
	}
	return u, nil
}
