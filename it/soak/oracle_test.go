package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The oracle's tolerances. They are the contract's figures, not tuning knobs.
const (
	// lateTolerance is how late a deletion may be after its deadline while the
	// controller is up (DESIGN §4: deadlines are honoured to the second).
	lateTolerance = 2 * time.Second
	// adoptionTolerance is how late an adoption may be after the giver's
	// countdown ended (or its release was seen) while the controller is up: the
	// giver's pass hands the object over at the deadline (lateTolerance, as a
	// deletion), and the adopter's pass it wakes adopts it (as much again).
	adoptionTolerance = 2 * lateTolerance
	// redeclareGuard is the least time between declaring an object in limbo again
	// and the earliest moment limbo may delete it. A Bundle's spec and the
	// object are two objects: no precondition can order a spec write against a
	// delete that the controller decided a moment before, so the generator does
	// not race them; the races that a precondition does order (a cancel, a delay
	// raised, an expedite, all written on the object itself) are raced freely.
	redeclareGuard = 1500 * time.Millisecond
)

// fate is how a Bundle incarnation was deleted.
type fate string

const (
	fateBackground fate = "background"
	fateOrphan     fate = "orphan"
	fateForeground fate = "foreground"
)

// rvInterval is a span of etcd revisions [from, to); to == 0 while it is open.
// Resource versions are etcd revisions, one counter for every object: that is
// an implementation detail of kube-apiserver with etcd, which this test
// relies on to order a Bundle write against an object's deletion exactly.
type rvInterval struct {
	from, to int64
	// since is when the write at from returned.
	since time.Time
}

func (i rvInterval) contains(rv int64) bool { return rv > i.from && (i.to == 0 || rv < i.to) }

// outage is a span in which limbo could not act: the controller process was
// down (killed until ready again), or kube-apiserver was restarting.
type outage struct {
	what string
	// shard is the shard whose controller a controller outage took down: the
	// Bundles in it, and what its reaper acts on, wait (see outagesFor). ""
	// in a run not sharded, and for kube-apiserver's: everything waits.
	shard      string
	start, end time.Time // end is zero while it lasts
	// stale: a controller outage after which the controller that acts is not
	// a process started afresh (a standby's kill, or a failover to a standby
	// that ran through a kube-apiserver outage): its watches may still back
	// off, so it does not end a kube-apiserver outage early (effectiveEnd).
	stale bool
}

// incarnation is one object (one UID) as the watch saw it.
type incarnation struct {
	uid    types.UID
	meta   metav1.ObjectMeta
	seenAt time.Time
	// touchedAt is when the generator last moved its deadline (edited the delay
	// on the live object, or expedited it): limbo cannot act on a deadline
	// before it is written.
	touchedAt time.Time
	// controller is the last controller (a Bundle's UID) seen on it: the
	// garbage collector may remove the owner reference of a Bundle deleted with
	// --cascade=orphan before the generator records the deletion.
	controller types.UID
	// forced: the generator deleted it itself (kubectl delete), or may have: a
	// DELETE without an answer.
	forced  bool
	deleted bool
	// overdue: a missed deadline was already reported.
	overdue bool
	// releasedAt is when the watch saw its controller let it go (a teardown's
	// release): from then on the reaper acts on it (see governors). Zero
	// while controlled, or when the release fell in a watch gap.
	releasedAt time.Time
	// viaHandOver: its release was a hand-over (awaited at its revision) or a
	// cancel: only such a release ends the readiness holds; any other release
	// while one is in force is a violation (a half-applied Bundle deletes
	// nothing, and a release hands the object to the reaper).
	viaHandOver bool
	// gapFrom, for an incarnation that vanished in a watch gap, is the least
	// revision its deletion may have had (one past the last one seen); its
	// deletion is judged as if at any revision from there to the list's.
	gapFrom int64
	// siblings, for a deleted incarnation, are the other objects its controller
	// still controlled when the deletion was seen: the watch delivers in
	// revision order, so that is their state just before the deletion.
	siblings []string
}

// objectModel is what the generator asked for one ConfigMap name, and its
// current incarnation.
type objectModel struct {
	name string
	// declarers are the Bundle slots whose spec declares the object (or keeps
	// it: a spec with no resources and no allowEmpty). Two while it is handed
	// over: the Bundle it goes to declares it to adopt it before the one it
	// leaves drops it.
	declarers map[string]bool
	// desired are the revisions in which a Bundle declared the object (or kept
	// it while a spec with no resources and no allowEmpty is refused).
	desired []rvInterval
	// protected are the revisions in which it was left behind by a Bundle
	// deleted with --cascade=orphan, and not declared again.
	protected []rvInterval
	// undesiredAt is when it last stopped being desired.
	undesiredAt time.Time
	// droppedAt is when a Bundle last stopped declaring it, another one
	// declaring it or not (a hand-over's giver).
	droppedAt time.Time
	// foreign: kubectl limbo cancel made it an unmanaged object.
	foreign bool
	live    *incarnation
	// adopter is the Bundle that declared the object to adopt it while
	// another may have controlled it, until it is seen controlling it (see
	// holdAdopting); zero when none waits.
	adopter adopter
	// awaited are the revisions in which an adopter waited for it: its
	// controller may stamp it then, Ready or not (see handOverStamp).
	awaited []rvInterval
}

// adopter is a Bundle incarnation (uid) of a slot that waits to adopt an object,
// since the write at revision since, which returned at time at; object is the
// incarnation that existed then (none: the adopter makes a new one). from is
// when a spec error of the adopter, which writes nothing, last ended (zero:
// none); overdue: a late adoption was already reported.
type adopter struct {
	slot    string
	uid     types.UID
	since   int64
	at      time.Time
	object  types.UID
	from    time.Time
	overdue bool
}

// spanAt is the span that contains rv.
func spanAt(spans []rvInterval, rv int64) (rvInterval, bool) {
	i := slices.IndexFunc(spans, func(i rvInterval) bool { return i.contains(rv) })
	if i < 0 {
		return rvInterval{}, false
	}
	return spans[i], true
}

// spanThroughout is the span that contains every revision of [from, to].
func spanThroughout(spans []rvInterval, from, to int64) (rvInterval, bool) {
	span, ok := spanAt(spans, from)
	return span, ok && span.contains(to)
}

func isOpen(spans []rvInterval) bool { return len(spans) > 0 && spans[len(spans)-1].to == 0 }

func open(spans []rvInterval, rv int64, since time.Time) []rvInterval {
	if isOpen(spans) {
		return spans
	}
	return append(spans, rvInterval{from: rv, since: since})
}

func closeAt(spans []rvInterval, rv int64) []rvInterval {
	if isOpen(spans) {
		spans[len(spans)-1].to = rv
	}
	return spans
}

// stats are the run's figures.
type stats struct {
	ops                                 map[string]int
	chaos                               map[string]int
	engineDeletions, immediateDeletions int
	// generatedDeletions are limbo's deletions of objects a plugin generated
	// (limbo.dev/generatedBy: the generator's resources, see slot.generated).
	generatedDeletions                       int
	forcedDeletions, foregroundDeletions     int
	cancels, controllerRestarts, apiRestarts int
	watchGaps, outageRaces                   int
	// orderedTeardownSteps counts deletions and releases by a background
	// teardown of objects that others depended on: the order was checked.
	orderedTeardownSteps int
	// opsNotReady counts the operations made while their Bundle's gate was
	// not Ready, by type.
	opsNotReady map[string]int
	// held counts, by hold name, the orphans a hold kept until it ended (their
	// deletion was due from then on).
	held map[string]int
	// handOvers counts hand-overs by variant (see missingVariants), and
	// their objects seen adopted by the Bundle that waited for them (the
	// same incarnation) as handOverAdopted.
	handOvers map[string]int
	// moves counts move-shard operations by variant (see missingMoves).
	moves map[string]int
	// maxAdoptionWait is the longest an adopter waited, from its write to the
	// adoption seen (the countdown it waits for included).
	maxAdoptionWait       time.Duration
	maxAdoptionWaitObject string
	// collectorHolds counts deleted Bundles the garbage collector still held
	// with its own finalizer when the wait ended (limbo's finalizer gone), and
	// collectorEvidence says what the controller manager logged about them.
	collectorHolds                               int
	collectorEvidence                            []string
	maxLateness, maxAdjustedLateness             time.Duration
	maxLatenessObject, maxAdjustedLatenessObject string
}

// oracle checks every deletion of the run against a model kept from the
// generator's operations (what the user asked for) and a watch of the
// ConfigMaps (what happened), with the rules of DESIGN §2–§4:
//
//   - no deletion before its deadline (the stamp on the deleted object plus its
//     delay);
//   - no deletion of an object while a Bundle declares it, of an object
//     --cascade=orphan left behind, or of an object kubectl limbo cancel took out
//     of limbo;
//   - no deadline missed by more than lateTolerance, except across an outage:
//     then by at most lateTolerance after the outage ends;
//   - at the end, nothing lost (every declared or kept object exists) and
//     nothing leaked (every other object is gone).
type oracle struct {
	journal      // and its lock, which guards everything
	objects      map[string]*objectModel
	incarnations map[types.UID]*incarnation
	fates        map[types.UID]fate
	// fateRevs are the revisions of the Bundles' deletions.
	fateRevs map[types.UID]int64
	// holds are, per hold and Bundle incarnation, the revisions in which the
	// hold was in force: nothing the Bundle controls may be deleted or stamped
	// then (see hold).
	holds map[*hold]map[types.UID][]rvInterval
	// dependents are, per Bundle incarnation deleted, the objects that depended
	// on each object in its last spec: a background teardown deletes an
	// object only once those are gone or released (DESIGN §3).
	dependents map[types.UID]map[string][]string
	// releases are, per Bundle incarnation whose dependents are not known yet,
	// the objects seen leaving its control (see teardownOrder).
	releases map[types.UID][]release
	// relisting: the objects seen now come from a re-list after a watch gap,
	// not in revision order.
	relisting bool
	outages   []outage
	stats     stats
	// slots defer the judging of a deletion while an operation on its Bundle is
	// between its write and the model's update.
	slots map[string]*slotOps
	// watchingSince is when the watch last (re)connected.
	watchingSince time.Time
	// sharded: the run's controllers are sharded, and a controller outage
	// is one for its shard's objects only (outage.shard); shards are the
	// shards each Bundle incarnation was in, over time (see shardLog). Not
	// sharded: every outage counts for every object.
	sharded bool
	shards  map[types.UID]shardLog
	// generators are, by Bundle slot, the times a Bundle incarnation's spec
	// declared a generator resource: the reaper holds a released object of
	// the slot's name while that Bundle has not passed its current spec (it
	// may make the object again), so its shard's outages count too
	// (governors) — until its deletion ends the hold, not from the moment the
	// oracle learns of it (seeds 176699246, 580248476: that Bundle deleted
	// once its shard was back, the object deleted a second later).
	generators map[string][]generatorSpan
}

// generatorSpan is a time Bundle incarnation uid declared a generator
// resource, until a spec without one or its deletion (zero: it still does).
type generatorSpan struct {
	uid   types.UID
	until time.Time
}

// slotOps tracks the operation in flight on one Bundle slot.
type slotOps struct {
	busy bool
	// queued are the judgements deferred until the operation ends.
	queued []func()
}

// judge judges now, or once the operation in flight on bundle updated the
// model: its write may land (and limbo act on it) before the generator
// records it.
func (o *oracle) judge(judgement func(), bundles ...string) {
	for _, b := range bundles {
		if s := o.slot(b); s.busy {
			// Again once this one ended: another may still be busy.
			s.queued = append(s.queued, func() { o.judge(judgement, bundles...) })
			return
		}
	}
	judgement()
}

// bundlesOf are the Bundle slots whose operations may concern object m, meta
// its state: the one of its name, those that declare it, and the one of its
// limbo.dev/bundle label (the Bundle that manages it, or last did).
func bundlesOf(m *objectModel, meta metav1.ObjectMeta) []string {
	bundles := append([]string{bundleOf(m.name)}, slices.Sorted(maps.Keys(m.declarers))...)
	if b := meta.Labels[limbov1alpha1.LabelBundle]; b != "" {
		bundles = append(bundles, b)
	}
	return bundles
}

// busy tells whether an operation on one of bundles is in flight.
func (o *oracle) busy(bundles []string) bool {
	return slices.ContainsFunc(bundles, func(b string) bool { return o.slot(b).busy })
}

func newOracle() *oracle {
	return &oracle{
		objects:      map[string]*objectModel{},
		incarnations: map[types.UID]*incarnation{},
		fates:        map[types.UID]fate{},
		fateRevs:     map[types.UID]int64{},
		holds:        map[*hold]map[types.UID][]rvInterval{holdInvalidSpec: {}, holdNotReady: {}, holdAdopting: {}},
		dependents:   map[types.UID]map[string][]string{},
		releases:     map[types.UID][]release{},
		slots:        map[string]*slotOps{},
		stats:        stats{ops: map[string]int{}, chaos: map[string]int{}, held: map[string]int{}, opsNotReady: map[string]int{}, handOvers: map[string]int{}, moves: map[string]int{}},
		shards:       map[types.UID]shardLog{},
		generators:   map[string][]generatorSpan{},
	}
}

func (o *oracle) object(name string) *objectModel {
	m := o.objects[name]
	if m == nil {
		m = &objectModel{name: name, declarers: map[string]bool{}}
		o.objects[name] = m
	}
	return m
}

func (o *oracle) slot(bundle string) *slotOps {
	s := o.slots[bundle]
	if s == nil {
		s = &slotOps{}
		o.slots[bundle] = s
	}
	return s
}

// begin marks an operation on bundle in flight: a deletion observed until end
// is judged after the operation updated the model, since the write may land
// (and limbo act on it) before the generator records it.
func (o *oracle) begin(bundle string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.slot(bundle).busy = true
}

// end ends the operation begun on bundle and makes the judgements it
// deferred.
func (o *oracle) end(bundle string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.slot(bundle)
	s.busy = false
	for _, judgement := range s.queued {
		judgement()
	}
	s.queued = nil
}

// controlledIn lists, sorted, the objects of shard that exist, are declared
// and controlled by a Bundle, and are not in limbo.
func (o *oracle) controlledIn(shard string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for name, m := range o.objects {
		if m.live == nil || m.live.deleted || !isOpen(m.desired) {
			continue
		}
		meta := m.live.meta
		if _, stamped := parseStamp(meta); stamped || controllerUID(meta) == "" || shardOfLabels(meta.Labels) != shard {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// declaresGenerators records whether the spec just written at time at for
// Bundle incarnation uid of slot bundle declares a generator resource (no
// after its deletion).
func (o *oracle) declaresGenerators(bundle string, uid types.UID, yes bool, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	spans := o.generators[bundle]
	if n := len(spans); n > 0 && spans[n-1].until.IsZero() {
		if yes && spans[n-1].uid == uid {
			return
		}
		spans[n-1].until = at
	}
	if yes {
		spans = append(spans, generatorSpan{uid: uid})
	}
	o.generators[bundle] = spans
}

// generatorsHolding are the generator spans of the Bundle of inc's name that
// may have held inc, released, at or after due (when it was due): the
// reaper leaves it to that Bundle.
func (o *oracle) generatorsHolding(inc *incarnation, due time.Time) []generatorSpan {
	if controllerUID(inc.meta) != "" {
		return nil
	}
	var holding []generatorSpan
	for _, span := range o.generators[inc.meta.Labels[limbov1alpha1.LabelBundle]] {
		if span.until.IsZero() || span.until.After(due) {
			holding = append(holding, span)
		}
	}
	return holding
}

// countChaos counts a chaos event (a kill, a restart) by type.
func (o *oracle) countChaos(event string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.chaos[event]++
}

// opCounts are the operations done so far, by type, how many times a
// teardown's order was checked (orderedTeardownSteps), and how many orphans a
// gate not Ready kept until it ended (held).
func (o *oracle) opCounts() (map[string]int, int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.stats.ops), o.stats.orderedTeardownSteps, o.stats.held[holdNotReady.name]
}

// countOp counts an operation by type, and apart when its Bundle's gate was
// not Ready (notReady).
func (o *oracle) countOp(op string, notReady bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.ops[op]++
	if notReady {
		o.stats.opsNotReady[op]++
	}
}

// --- what the generator did ---

// declared: a write of bundle's spec at revision rv declares names.
func (o *oracle) declared(bundle string, rv int64, names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, name := range names {
		m := o.object(name)
		m.declarers[bundle] = true
		m.desired = open(m.desired, rv, time.Now())
		m.protected = closeAt(m.protected, rv)
		m.foreign = false
	}
}

// undeclared: a write of bundle's spec (or its deletion) at revision rv, at
// time at, stops declaring names. An object another Bundle declares stays
// desired.
func (o *oracle) undeclared(bundle string, rv int64, at time.Time, names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, name := range names {
		m := o.objects[name]
		if m == nil || !m.declarers[bundle] {
			continue
		}
		delete(m.declarers, bundle)
		m.droppedAt = at
		if m.adopter.slot == bundle {
			// Dropped before it adopted it: its resource, not Ready, is gone.
			o.endHold(holdAdopting, m.adopter.uid, rv, at)
			m.adopter, m.awaited = adopter{}, closeAt(m.awaited, rv)
		}
		if len(m.declarers) == 0 {
			m.desired = closeAt(m.desired, rv)
			m.undesiredAt = at
		}
	}
}

// adopting: a write of bundle's spec (the Bundle incarnation uid) at revision
// rv declared name to adopt it (limbo.dev/adopt) while another Bundle may
// control it. Until uid is seen controlling it, that resource is not Ready
// (ControlledByOther, while the other Bundle's countdown runs: docs/soft-delete.md,
// "Moving an object from one Bundle to another"), and the Bundle hands none of
// its orphans to the soft-delete engine (holdAdopting). The generator starts no
// second one on the same Bundle meanwhile.
func (o *oracle) adopting(bundle string, uid types.UID, rv int64, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.object(name)
	m.adopter = adopter{slot: bundle, uid: uid, since: rv, at: time.Now()}
	m.awaited = open(m.awaited, rv, time.Now())
	if m.live != nil && !m.live.deleted {
		m.adopter.object = m.live.uid
	}
	o.holds[holdAdopting][uid] = open(o.holds[holdAdopting][uid], rv, time.Now())
	if inc := m.live; inc != nil && !inc.deleted && controllerUID(inc.meta) == uid {
		// Adopted before the write returned.
		seen, _ := strconv.ParseInt(inc.meta.ResourceVersion, 10, 64)
		o.adoptedLocked(m, inc.uid, seen, time.Now())
	}
}

// adoptedLocked: m's adopter was seen controlling it, the incarnation uid, at
// revision rv, at time at: its resource is Ready, and what the hold kept is due
// from then on.
func (o *oracle) adoptedLocked(m *objectModel, uid types.UID, rv int64, at time.Time) {
	o.endHold(holdAdopting, m.adopter.uid, rv, at)
	wait := at.Sub(m.adopter.at)
	how := "made anew" // the object it was to adopt was gone
	if uid == m.adopter.object {
		how = "adopted"
		o.stats.handOvers[handOverAdopted]++
	}
	o.logf("%s %s by Bundle %s (uid %s), declared to adopt it at revision %d, %v before", m.name, how, m.adopter.slot, short(m.adopter.uid), m.adopter.since, wait.Round(time.Millisecond))
	if wait > o.stats.maxAdoptionWait {
		o.stats.maxAdoptionWait, o.stats.maxAdoptionWaitObject = wait, m.name
	}
	m.adopter, m.awaited = adopter{}, closeAt(m.awaited, rv)
}

// judgeHandOver judges a release of m by its controller was at revision rv,
// seen at time at, meta its state then: when a Bundle waited to adopt m, and
// was had not been deleted (its teardown releases at once, and the garbage
// collector after --cascade=orphan), it is a pass's hand-over, which comes at
// the end of the object's countdown, as a deletion would: through limbo,
// stamped, at or after its deadline (DESIGN §4; docs/soft-delete.md, "Moving an
// object from one Bundle to another"). The stamp stays on the released object.
// A hand-over while a resource of was is not Ready is allowed (it deletes
// nothing), and counted (handOverGiverNotReady).
func (o *oracle) judgeHandOver(m *objectModel, meta metav1.ObjectMeta, was types.UID, rv int64, at time.Time) {
	if _, awaited := spanAt(m.awaited, rv); !awaited || m.foreign || (o.fates[was] != "" && rv > o.fateRevs[was]) {
		return
	}
	what := fmt.Sprintf("%s (uid %s, revision %d, annotations %v)", meta.Name, short(meta.UID), rv, limboAnnotations(meta))
	o.checkDeadline(what, "handed over", meta, at)
	if _, notReady := spanAt(o.holds[holdNotReady][was], rv); notReady {
		o.stats.handOvers[handOverGiverNotReady]++
		o.logf("%s handed over while a resource of its Bundle (uid %s) was not Ready", what, short(was))
	}
}

// handOverStamp tells whether a stamp of m at revision rv is free of h, a hold
// on the Bundle that controlled m: a hand-over deletes nothing, so a Bundle
// that is not Ready still counts down an orphan another Bundle declares to
// adopt, and hands it over at its deadline (docs/soft-delete.md, "Moving an
// object from one Bundle to another"). A spec error writes nothing at all.
func handOverStamp(m *objectModel, h *hold, rv int64) bool {
	_, awaited := spanThroughout(m.awaited, rv, rv)
	return awaited && h != holdInvalidSpec
}

// adoptingInto tells whether the Bundle incarnation uid waits to adopt an
// object.
func (o *oracle) adoptingInto(uid types.UID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return isOpen(o.holds[holdAdopting][uid])
}

// givingAway tells whether an object that the Bundle incarnation uid controls
// waits to be adopted by another Bundle: uid must not hold its orphans then
// (the hand-over happens at the end of its countdown).
func (o *oracle) givingAway(uid types.UID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range o.objects {
		if m.adopter.uid != "" && m.live != nil && !m.live.deleted && controllerUID(m.live.meta) == uid {
			return true
		}
	}
	return false
}

// handedOver counts a hand-over of the variant.
func (o *oracle) handedOver(variant string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.handOvers[variant]++
}

// handOverCounts are the hand-overs done so far, by variant, and their objects
// adopted.
func (o *oracle) handOverCounts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.stats.handOvers)
}

// bundleDeleted: the Bundle incarnation uid of slot bundle was deleted with
// cascade f at revision rv. Every object it controls is then left behind
// (orphan), deleted by the garbage collector (foreground), or torn down
// (background).
func (o *oracle) bundleDeleted(bundle string, uid types.UID, f fate, rv int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fates[uid] = f
	o.fateRevs[uid] = rv
	// Torn down whatever its readiness: what the holds kept is due (or left
	// behind) from the deletion on.
	o.endHold(holdNotReady, uid, rv, time.Now())
	o.endHold(holdAdopting, uid, rv, time.Now())
	if f != fateOrphan {
		return
	}
	for _, m := range o.objects {
		// One another Bundle declares (to adopt it) is not left behind: that
		// Bundle adopts it.
		declaredElsewhere := slices.ContainsFunc(slices.Collect(maps.Keys(m.declarers)), func(b string) bool { return b != bundle })
		if m.live != nil && !m.live.deleted && m.live.controller == uid && !declaredElsewhere {
			m.protected = open(m.protected, rv, time.Now())
			o.logf("%s left behind by --cascade=orphan", m.name)
		}
	}
}

// hold is a reason why a Bundle incarnation must neither delete nor stamp
// (write limbo.dev/deletionTimestamp on) any object it controls, for a span of
// revisions: from the write that started it to the one that ended it. What it
// kept is due from that end on, at the earliest (holdEnded), and must still
// exist at the end of the run while the hold lasts (finalCheck).
type hold struct {
	name string
	// while says what held, of the Bundle whose short UID fills its %s.
	while string
	// releases: removing the object's controller reference breaks the hold too.
	releases bool
}

var (
	// holdInvalidSpec: the spec has an error; limbo writes and deletes nothing
	// of the Bundle until it is fixed (DESIGN §2) — not the objects it
	// declares, not the orphans, past their deadlines or not.
	holdInvalidSpec = &hold{name: "invalid spec", while: "the spec of its Bundle (uid %s) was invalid (a spec error writes nothing)", releases: true}
	// holdNotReady: a resource of the Bundle is not Ready (its own status, or
	// Blocked by a dependency that is not); its orphans go to the soft-delete
	// engine only when every resource is Ready (DESIGN §3, step 6), so none is
	// stamped or deleted meanwhile. The Bundle's deletion ends it: a deleted
	// Bundle is torn down whatever its readiness (bundleDeleted). A release is
	// not the pass's: only a teardown and kubectl limbo cancel release.
	holdNotReady = &hold{name: "not Ready", while: "a resource of its Bundle (uid %s) was not Ready (a half-applied Bundle deletes nothing)"}
	// holdAdopting: a resource of the Bundle declares an object to adopt it
	// that another Bundle still controls (ControlledByOther) or that it has
	// not adopted yet: not Ready either, so the same holds (see adopting). It
	// ends when the Bundle is seen controlling the object, drops it, or is
	// deleted.
	holdAdopting = &hold{name: "adopting", while: "a resource of its Bundle (uid %s) waited to adopt an object another Bundle controlled (not Ready: a half-applied Bundle deletes nothing)"}
	// holdKinds are every kind of hold.
	holdKinds = []*hold{holdInvalidSpec, holdNotReady, holdAdopting}
)

// holdStarted: a write at revision rv started h on the Bundle incarnation uid.
func (o *oracle) holdStarted(h *hold, uid types.UID, rv int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holds[h][uid] = open(o.holds[h][uid], rv, time.Now())
}

// holdEnded: a write at revision rv, at time at, ended h on uid.
func (o *oracle) holdEnded(h *hold, uid types.UID, rv int64, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endHold(h, uid, rv, at)
}

// endHold ends h on uid at revision rv, at time at: what it kept is due from
// then on (at the earliest).
func (o *oracle) endHold(h *hold, uid types.UID, rv int64, at time.Time) {
	if !isOpen(o.holds[h][uid]) {
		return
	}
	o.holds[h][uid] = closeAt(o.holds[h][uid], rv)
	for _, m := range o.objects {
		if m.live != nil && !m.live.deleted && controllerUID(m.live.meta) == uid && !isOpen(m.desired) {
			m.undesiredAt = latest(m.undesiredAt, at)
			o.stats.held[h.name]++
		}
		if h == holdInvalidSpec && m.adopter.uid == uid {
			// The adopter wrote nothing meanwhile: it may adopt from now on.
			m.adopter.from = latest(m.adopter.from, at)
		}
	}
}

// holdsThroughout are the holds on the Bundle incarnation c in force through
// every revision of [from, to].
func (o *oracle) holdsThroughout(c types.UID, from, to int64) []*hold {
	var in []*hold
	for _, h := range holdKinds {
		if _, ok := spanThroughout(o.holds[h][c], from, to); c != "" && ok {
			in = append(in, h)
		}
	}
	return in
}

// teardownOrder: in the last spec of the Bundle incarnation uid, dependents[x]
// are the objects that depend on object x. Releases seen before are judged now.
func (o *oracle) teardownOrder(uid types.UID, dependents map[string][]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dependents[uid] = dependents
	for _, r := range o.releases[uid] {
		o.checkOrder(uid, r)
	}
	delete(o.releases, uid)
}

// release is an object seen leaving the control of a Bundle: deleted, or
// released (its controller reference removed), at revision rv, while siblings
// were still controlled by that Bundle.
type release struct {
	what     string
	name     string
	rv       int64
	siblings []string
}

// checkOrder checks, for an object that left the control of the Bundle
// incarnation c, that a background teardown of c took it only once every
// object that depends on it was gone or released: reverse dependency order,
// each wave once the previous one is gone (DESIGN §3), for the objects it
// deletes and for the ones with a delay, which it releases instead.
func (o *oracle) checkOrder(c types.UID, r release) {
	if o.fates[c] != fateBackground || r.rv <= o.fateRevs[c] || len(o.dependents[c][r.name]) == 0 {
		return
	}
	o.stats.orderedTeardownSteps++
	for _, d := range o.dependents[c][r.name] {
		if slices.Contains(r.siblings, d) {
			o.violatef("%s by its Bundle's teardown while %s, which depends on it, was still controlled by the Bundle (not reverse dependency order)", r.what, d)
		}
	}
}

// controlledBy are the names of the live objects that c controls.
func (o *oracle) controlledBy(c types.UID) []string {
	var names []string
	for _, m := range o.objects {
		if m.live != nil && !m.live.deleted && controllerUID(m.live.meta) == c {
			names = append(names, m.name)
		}
	}
	return names
}

// controlled are, sorted, the names of the live objects that the Bundle
// incarnation c controls (none for no Bundle).
func (o *oracle) controlled(c types.UID) []string {
	if c == "" {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(slices.Values(o.controlledBy(c)))
}

// heldNow tells whether a hold on the Bundle that controls inc is in force.
func (o *oracle) heldNow(inc *incarnation) bool {
	c := controllerUID(inc.meta)
	return c != "" && slices.ContainsFunc(holdKinds, func(h *hold) bool { return isOpen(o.holds[h][c]) })
}

// forcing: the generator is about to delete uid itself (notForced takes it
// back if the DELETE is refused).
func (o *oracle) forcing(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if inc := o.incarnations[uid]; inc != nil {
		inc.forced = true
	} else {
		o.incarnations[uid] = &incarnation{uid: uid, forced: true}
	}
}

// notForced: the generator's DELETE of uid was refused; the object is still
// limbo's to delete.
func (o *oracle) notForced(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if inc := o.incarnations[uid]; inc != nil {
		inc.forced = false
	}
}

// touched: the generator moved the deadline of uid (a delay edit, an
// expedite) at time at.
func (o *oracle) touched(uid types.UID, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if inc := o.incarnations[uid]; inc != nil {
		inc.touchedAt = at
	}
}

// cancelled: kubectl limbo cancel took name out of limbo and out of its Bundle.
func (o *oracle) cancelled(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.objects[name]; m != nil {
		m.foreign = true
	}
	o.stats.cancels++
}

// outageStarted and outageEnded are the observer's: an outage of kube-apiserver,
// or of the controller of a run not sharded.
func (o *oracle) outageStarted(what string) { o.outageStartedAt(what, "", time.Now()) }

func (o *oracle) outageEnded(what string) { o.outageEndedAs(what, "", false) }

// outageStartedAt: an outage began at start (before it was seen: a
// controller replica that exited on its own); shard: see outage.shard.
func (o *oracle) outageStartedAt(what, shard string, start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outages = append(o.outages, outage{what: what, shard: shard, start: start})
	o.logf("outage: %s%s (since %s)", what, ofShard(shard), start.Format("15:04:05.000"))
	switch what {
	case outageController:
		o.stats.controllerRestarts++
	case outageAPIServer:
		o.stats.apiRestarts++
	}
}

// outageEndedAs ends the outage of what (of shard) that lasts; stale: see
// outage.stale.
func (o *oracle) outageEndedAs(what, shard string, stale bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.outages) - 1; i >= 0; i-- {
		if o.outages[i].what == what && o.outages[i].shard == shard && o.outages[i].end.IsZero() {
			o.outages[i].end, o.outages[i].stale = time.Now(), stale
			o.logf("outage over: %s%s after %v", what, ofShard(shard), o.outages[i].end.Sub(o.outages[i].start).Round(time.Millisecond))
			return
		}
	}
}

// ofShard names shard in a log line ("" for none).
func ofShard(shard string) string {
	if shard == "" {
		return ""
	}
	return " of shard " + shard
}

const (
	outageController = "controller"
	outageAPIServer  = "kube-apiserver"
)

// --- what the generator asks ---

// view is what the generator may know of an object.
type view struct {
	exists  bool
	uid     types.UID
	meta    metav1.ObjectMeta
	desired bool
	// declarers are the Bundle slots that declare it.
	declarers []string
	protected bool
	foreign   bool
	// held: a hold on the Bundle that controls it is in force (see hold):
	// limbo may not delete it until that Bundle's generator ends the hold.
	held bool
}

func (o *oracle) view(name string) view {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.objects[name]
	if m == nil {
		return view{}
	}
	v := view{desired: isOpen(m.desired), declarers: slices.Sorted(maps.Keys(m.declarers)), protected: isOpen(m.protected), foreign: m.foreign}
	if m.live != nil && !m.live.deleted {
		v.exists, v.uid, v.meta, v.held = true, m.live.uid, *m.live.meta.DeepCopy(), o.heldNow(m.live)
	}
	return v
}

// earliestDeletion is the earliest time limbo may delete the object of v
// (zero: at once), and false when it never may (or not while a hold, which
// only the generator's next operation on the Bundle ends, is in force).
func earliestDeletion(v view, now time.Time) (time.Time, bool) {
	if !v.exists || v.desired || v.protected || v.foreign || v.held {
		return time.Time{}, false
	}
	value, ok := v.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]
	if !ok {
		return time.Time{}, true
	}
	delay, err := softdelete.ParseDelay(value)
	if err != nil {
		return time.Time{}, false
	}
	if stamp, ok := parseStamp(v.meta); ok {
		return stamp.Add(delay), true
	}
	// Not stamped yet: the stamp will be now or later, truncated to the second.
	return now.Truncate(time.Second).Add(delay), true
}

// safeToDeclare tells whether declaring the object of v now cannot race its
// deletion (see redeclareGuard). Right after a kube-apiserver outage limbo's
// caches lag more than redeclareGuard (its watches back off while the API is
// away, see effectiveEnd): until limbo is back, the guard counts from then.
func (o *oracle) safeToDeclare(v view, now time.Time) bool {
	at, may := earliestDeletion(v, now)
	return !may || !at.Before(latest(now, o.apiSettledAt()).Add(redeclareGuard))
}

// apiSettledAt is when limbo is back after the kube-apiserver outages so far
// (effectiveEnd), at the latest; zero when there was none.
func (o *oracle) apiSettledAt() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var at time.Time
	for _, out := range o.outages {
		if out.what == outageAPIServer {
			at = latest(at, o.effectiveEnd(out, ""))
		}
	}
	return at
}

func parseStamp(meta metav1.ObjectMeta) (time.Time, bool) {
	value, ok := meta.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]
	if !ok {
		return time.Time{}, false
	}
	stamp, err := time.Parse(time.RFC3339, value)
	return stamp, err == nil
}

func controllerUID(meta metav1.ObjectMeta) types.UID {
	if ref := metav1.GetControllerOfNoCopy(&meta); ref != nil {
		return ref.UID
	}
	return ""
}

// --- what happened ---

// watch feeds the oracle every change of the ConfigMaps in namespace, from
// resourceVersion on, until ctx ends. After a broken watch it resumes from the
// last revision seen, so that no DELETE (with the object's last state) is
// missed. A restarted kube-apiserver serves watches from a cache that starts at
// its own start, and answers an older revision with 410 Gone: then the
// ConfigMaps are listed again, and an object that vanished in the gap is judged
// at the list's revision and time (see resync).
func (o *oracle) watch(ctx context.Context, cs kubernetes.Interface, namespace, resourceVersion string) {
	for ctx.Err() == nil {
		w, err := cs.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			resourceVersion = o.resync(ctx, cs, namespace, resourceVersion)
			continue
		}
		if err != nil {
			o.Log("watch from revision %s: %v", resourceVersion, err)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		o.mu.Lock()
		o.logf("watching from revision %s", resourceVersion)
		o.watchingSince = time.Now()
		o.mu.Unlock()
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				status := apierrors.FromObject(ev.Object)
				o.Log("watch error: %v", status)
				if apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
					resourceVersion = o.resync(ctx, cs, namespace, resourceVersion)
				}
			case watch.Bookmark:
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					resourceVersion = cm.ResourceVersion
				}
			default:
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				resourceVersion = cm.ResourceVersion
				o.observe(ev.Type, cm.ObjectMeta, time.Now())
			}
		}
		w.Stop()
	}
}

// resync lists the ConfigMaps after the watch lost its place and returns the
// list's revision (see relisted).
func (o *oracle) resync(ctx context.Context, cs kubernetes.Interface, namespace, lost string) string {
	for ctx.Err() == nil {
		list, err := cs.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		o.relisted(lost, list, time.Now())
		return list.ResourceVersion
	}
	return lost
}

// relisted takes in a list made at time now after the watch lost its place at
// revision lost. An incarnation known to exist that the list lacks was deleted
// in the gap: it is judged first, on its last state seen, at the list's
// revision and time, which bound the deletion from above (its last revision
// seen bounds it from below: see gapFrom). Only then are the listed items
// taken in, so that an object deleted and created again under the same name in
// the gap does not replace its first incarnation before that one is judged.
func (o *oracle) relisted(lost string, list *corev1.ConfigMapList, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.watchGaps++
	o.logf("watch lost its place at revision %s; listed again at revision %s", lost, list.ResourceVersion)
	listed := map[types.UID]bool{}
	for i := range list.Items {
		listed[list.Items[i].UID] = true
	}
	var vanished []*incarnation
	for _, m := range o.objects {
		if m.live != nil && !m.live.deleted && !listed[m.live.uid] {
			vanished = append(vanished, m.live)
		}
	}
	sort.Slice(vanished, func(i, j int) bool { return vanished[i].meta.Name < vanished[j].meta.Name })
	for _, inc := range vanished {
		seen, _ := strconv.ParseInt(inc.meta.ResourceVersion, 10, 64)
		inc.gapFrom = seen + 1
		meta := *inc.meta.DeepCopy()
		meta.ResourceVersion = list.ResourceVersion
		o.logf("%s (uid %s) vanished in the watch gap", meta.Name, short(meta.UID))
		o.observeLocked(watch.Deleted, meta, now)
	}
	// An adoption in the gap ends its hold before anything else is taken in:
	// a stamp of the adopter's orphan in the gap may have come after it. Its
	// revision is unknown, so the hold ends at the earliest it may have: a
	// rule broken only if it held through the whole gap.
	lostRV, _ := strconv.ParseInt(lost, 10, 64)
	for i := range list.Items {
		meta := list.Items[i].ObjectMeta
		if m := o.objects[meta.Name]; m != nil && m.adopter.uid != "" && controllerUID(meta) == m.adopter.uid {
			o.adoptedLocked(m, meta.UID, lostRV+1, now)
		}
	}
	o.relisting = true
	for i := range list.Items {
		o.observeLocked(watch.Modified, list.Items[i].ObjectMeta, now)
	}
	o.relisting = false
}

// watchingAfter tells whether the watch (re)connected after t.
func (o *oracle) watchingAfter(t time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watchingSince.After(t)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// bundleOf is the Bundle slot an object name belongs to: names are
// <bundle>-<resource>.
func bundleOf(name string) string {
	bundle, _, _ := strings.Cut(name, "-")
	return bundle
}

func (o *oracle) observe(typ watch.EventType, meta metav1.ObjectMeta, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.observeLocked(typ, meta, at)
}

func (o *oracle) observeLocked(typ watch.EventType, meta metav1.ObjectMeta, at time.Time) {
	m := o.object(meta.Name)
	inc := o.incarnations[meta.UID]
	if inc == nil {
		inc = &incarnation{uid: meta.UID}
		o.incarnations[meta.UID] = inc
	}
	prev := inc.meta
	was := controllerUID(prev)
	inc.meta, inc.seenAt = meta, at
	if uid := controllerUID(meta); uid != "" {
		inc.controller = uid
	}
	rv, _ := strconv.ParseInt(meta.ResourceVersion, 10, 64)
	if _, stamped := parseStamp(meta); typ == watch.Modified && prev.UID != "" && stamped && !hasKey(prev.Annotations, limbov1alpha1.AnnotationDeletionTimestamp) {
		// Stamped by limbo (kubectl limbo expedite only moves a stamp). After
		// a watch gap the stamp came somewhere after the last revision seen.
		from := rv
		if o.relisting {
			prevRV, _ := strconv.ParseInt(prev.ResourceVersion, 10, 64)
			from = prevRV + 1
		}
		c := inc.controller
		o.judge(func() {
			for _, h := range o.holdsThroughout(c, from, rv) {
				if !handOverStamp(m, h, rv) {
					o.violatef("%s (uid %s, revision %d) stamped while "+h.while, meta.Name, short(meta.UID), rv, short(c))
				}
			}
		}, bundlesOf(m, meta)...)
		if invalidDelay(meta) && !o.relisting {
			// Stamps are written with a resourceVersion precondition, so this
			// one was decided on the invalid delay (after a watch gap, the delay
			// may have come after the stamp).
			o.violatef("%s (uid %s, revision %d) stamped although its delay %q is invalid (never deleted until it is made valid)",
				meta.Name, short(meta.UID), rv, meta.Annotations[limbov1alpha1.AnnotationDeletionDelay])
		}
	}
	if typ == watch.Modified && was != "" && controllerUID(meta) == "" && !o.relisting {
		inc.releasedAt = at
	}
	if typ == watch.Modified && was != "" && controllerUID(meta) != was && !o.relisting {
		for _, h := range o.holdsThroughout(was, rv, rv) {
			if h.releases {
				// No release (a later deletion of the object, no longer
				// controlled, would escape the rule in judgeDeletion).
				o.violatef("%s (uid %s, revision %d) released while "+h.while, meta.Name, short(meta.UID), rv, short(was))
			}
		}
		o.judge(func() { o.judgeHandOver(m, meta, was, rv, at) }, bundlesOf(m, meta)...)
		if controllerUID(meta) == "" {
			o.judge(func() {
				if _, awaited := spanAt(m.awaited, rv); awaited || m.foreign {
					inc.viaHandOver = true
					return
				}
				for _, h := range o.holdsThroughout(was, rv, rv) {
					if !h.releases {
						o.violatef("%s (uid %s, revision %d) released, to no Bundle waiting for it, while "+h.while, meta.Name, short(meta.UID), rv, short(was))
					}
				}
			}, bundlesOf(m, meta)...)
		}
		r := release{what: fmt.Sprintf("%s (uid %s, revision %d) released", meta.Name, short(meta.UID), rv), name: meta.Name, rv: rv, siblings: o.controlledBy(was)}
		if _, known := o.dependents[was]; known {
			o.checkOrder(was, r)
		} else {
			o.releases[was] = append(o.releases[was], r)
		}
	}
	if typ != watch.Deleted {
		if m.live != inc {
			o.logf("%s created (uid %s)", meta.Name, short(meta.UID))
			if o.fates[inc.controller] == fateOrphan && !isOpen(m.desired) && !isOpen(m.protected) {
				// A pass that had not yet seen the delete (its cache lags, after
				// a kube-apiserver restart for seconds) created it for a Bundle
				// already deleted with --cascade=orphan: that Bundle's objects are
				// left behind, this one too ("nothing is deleted").
				m.protected = open(m.protected, rv, at)
				o.logf("%s left behind by --cascade=orphan: created after its Bundle's deletion", meta.Name)
			}
		}
		m.live = inc
		if m.adopter.uid != "" && controllerUID(meta) == m.adopter.uid {
			o.adoptedLocked(m, meta.UID, rv, at)
		}
		return
	}
	inc.deleted = true
	if m.live == inc {
		m.live = nil
	}
	if c := controllerUID(meta); c != "" {
		inc.siblings = o.controlledBy(c)
	}
	o.judge(func() { o.judgeDeletion(m, inc, at) }, bundlesOf(m, meta)...)
}

func short(uid types.UID) string { return string(uid)[:8] }

// judgeDeletion checks a deletion observed at time at. meta is the object's
// last state, which the delete was decided on (deletes carry a resourceVersion
// precondition), and its resourceVersion is the revision of the deletion.
func (o *oracle) judgeDeletion(m *objectModel, inc *incarnation, at time.Time) {
	meta := inc.meta
	rv, _ := strconv.ParseInt(meta.ResourceVersion, 10, 64)
	what := fmt.Sprintf("%s (uid %s, revision %d, annotations %v)", meta.Name, short(meta.UID), rv, limboAnnotations(meta))
	if inc.forced {
		o.stats.forcedDeletions++
		o.logf("%s deleted by the generator", what)
		// Gone for good: nothing is kept any more.
		m.foreign, m.protected = false, closeAt(m.protected, rv)
		return
	}
	if c := controllerUID(meta); o.fates[c] == fateForeground && rv > o.fateRevs[c] {
		// After the Bundle's deletion: the garbage collector's. One before it
		// (observed, or judged, after it) is limbo's, and judged below.
		o.stats.foregroundDeletions++
		o.logf("%s deleted by --cascade=foreground", what)
		return
	}
	// Any other deletion is limbo's (or the garbage collector's after a
	// teardown): it must be one the contract allows.
	o.stats.engineDeletions++
	if hasKey(meta.Annotations, limbov1alpha1.AnnotationGeneratedBy) {
		o.stats.generatedDeletions++
	}
	o.logf("%s deleted by limbo", what)
	// The revisions the deletion may have had: rv itself, or for one that
	// vanished in a watch gap, any from gapFrom to rv. A rule that holds
	// through a span of revisions is broken only if it held through them all.
	from := rv
	if inc.gapFrom > 0 && inc.gapFrom < rv {
		from = inc.gapFrom
	}
	desired := false
	if span, ok := spanThroughout(m.desired, from, rv); ok {
		desired = true
		stamp, _ := parseStamp(meta)
		if deadline, ok := deadlineOf(meta); ok && !stamp.After(span.since) && o.apiOutageHid(span.since, deadline, at, o.governors(inc, deadline)...) {
			// Declared again while in limbo (stamped before), but a
			// kube-apiserver outage kept it from limbo until the deadline:
			// which of the two limbo acts on first is a race that the
			// contract does not decide.
			o.stats.outageRaces++
			o.logf("%s deleted while declared since %s, but a kube-apiserver outage hid the declaration until its deadline %s",
				what, span.since.Format("15:04:05.000"), deadline.Format("15:04:05"))
		} else {
			o.violatef("%s deleted while its Bundle declared it (or kept it: a spec emptied without allowEmpty; or another Bundle declared it to adopt it)", what)
		}
	}
	if _, ok := spanThroughout(m.protected, from, rv); ok {
		o.violatef("%s deleted although --cascade=orphan left it behind (\"nothing is deleted\")", what)
	}
	c := controllerUID(meta)
	released := c == ""
	if released {
		// Released before: judged as its last controller's (a release while
		// the spec was invalid is flagged where it is seen).
		c = inc.controller
	}
	for _, h := range o.holdsThroughout(c, from, rv) {
		if released && !h.releases && (inc.viaHandOver || inc.releasedAt.IsZero()) {
			// A release ends the readiness holds: the object is no longer
			// the Bundle's to keep, but the reaper's (a hand-over by a pass
			// not Ready whose adopter then dropped the object, or went,
			// before adopting it: deleted once due, docs/design-decisions.md,
			// "A hand-over does not wait for the readiness gate").
			continue
		}
		o.violatef("%s deleted while "+h.while, what, short(c))
	}
	if c != "" && inc.gapFrom == 0 {
		o.checkOrder(c, release{what: what + " deleted", name: meta.Name, rv: rv, siblings: inc.siblings})
	}
	if m.foreign {
		// The cancel succeeded, so the object was there at its write: the
		// deletion came after it, whatever the last state carries.
		o.violatef("%s deleted after kubectl limbo cancel made it unmanaged", what)
	}
	if !hasKey(meta.Annotations, limbov1alpha1.AnnotationDeletionDelay) {
		o.stats.immediateDeletions++
	}
	due, ok := o.checkDeadline(what, "deleted", meta, at)
	if !ok || desired {
		return // not due at all: no lateness
	}
	due = latest(due, m.undesiredAt, inc.touchedAt)
	late, adjusted := at.Sub(due), at.Sub(o.adjust(due, o.governors(inc, due)...))
	if late > o.stats.maxLateness {
		o.stats.maxLateness, o.stats.maxLatenessObject = late, what
	}
	if adjusted > o.stats.maxAdjustedLateness {
		o.stats.maxAdjustedLateness, o.stats.maxAdjustedLatenessObject = adjusted, what
	}
	if tolerance := o.lateToleranceOf(inc, due); adjusted > tolerance && !inc.overdue {
		o.violatef("%s deleted %v after it was due at %s (%v after outages are taken off): more than %v late",
			what, late.Round(time.Millisecond), due.Format("15:04:05.000"), adjusted.Round(time.Millisecond), tolerance)
	}
}

// checkDeadline checks that an object that left limbo at time at — deleted by
// limbo, or handed over to another Bundle (verb says which) — carried a
// deadline that had come, and returns that deadline (for an object without a
// delay: zero, it is due at once).
func (o *oracle) checkDeadline(what, verb string, meta metav1.ObjectMeta, at time.Time) (time.Time, bool) {
	value, ok := meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]
	if !ok {
		return time.Time{}, true
	}
	delay, err := softdelete.ParseDelay(value)
	if err != nil {
		// Never deleted until the delay is made valid again (DESIGN §4): the
		// deletion was decided on this state (deletes carry a resourceVersion
		// precondition), so no later fix excuses it.
		o.violatef("%s %s with an invalid delay (never deleted until it is made valid): %v", what, verb, err)
		return time.Time{}, false
	}
	stamp, ok := parseStamp(meta)
	if !ok {
		o.violatef("%s %s without a valid %s although it has a delay of %v", what, verb, limbov1alpha1.AnnotationDeletionTimestamp, delay)
		return time.Time{}, false
	}
	deadline := stamp.Add(delay)
	if at.Before(deadline) {
		o.violatef("%s %s %v before its deadline %s", what, verb, deadline.Sub(at).Round(time.Millisecond), deadline.Format(time.RFC3339))
	}
	return deadline, true
}

// invalidDelay tells whether meta carries a limbo.dev/deletionDelay that does
// not parse (or is negative): limbo never deletes such an object (DESIGN §4).
func invalidDelay(meta metav1.ObjectMeta) bool {
	value, ok := meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]
	_, err := softdelete.ParseDelay(value)
	return ok && err != nil
}

// deadlineOf is the deadline of a stamped object with a valid delay.
func deadlineOf(meta metav1.ObjectMeta) (time.Time, bool) {
	delay, err := softdelete.ParseDelay(meta.Annotations[limbov1alpha1.AnnotationDeletionDelay])
	stamp, stamped := parseStamp(meta)
	return stamp.Add(delay), err == nil && stamped
}

// apiOutageHid tells whether a kube-apiserver outage hid a declaration made at
// since from limbo until the deadline: the outage began before limbo could see
// it (within redeclareGuard), limbo was not back long enough before the
// deadline to see it — back at the outage's end plus its length at the latest,
// its watches having backed off meanwhile (effectiveEnd) — and the deletion, at
// at, came before limbo must have seen it. Any outage overlapping the span
// excused any deletion, however long after limbo was back.
func (o *oracle) apiOutageHid(since, deadline, at time.Time, tls ...shardLog) bool {
	for _, out := range o.outagesFor(tls...) {
		if out.what != outageAPIServer || out.start.After(since.Add(redeclareGuard)) {
			continue
		}
		if out.end.IsZero() {
			return true
		}
		seen := out.end.Add(out.end.Sub(out.start)).Add(redeclareGuard)
		if out.end.After(since) && !deadline.After(seen) && !at.After(seen.Add(lateTolerance)) {
			return true
		}
	}
	return false
}

// overlaps tells whether one of outs overlapped [from, to], each ending at
// end(out) (zero while it lasts).
func overlaps(outs []outage, from, to time.Time, end func(outage) time.Time) bool {
	return slices.ContainsFunc(outs, func(out outage) bool {
		e := end(out)
		return !out.start.After(to) && (e.IsZero() || e.After(from))
	})
}

// effectiveEnd is when limbo is back after an outage (zero while it lasts).
// After a controller restart that is when the new process is ready. After a
// kube-apiserver restart the controller's own retries have backed off
// exponentially while the API was away (DESIGN §6: transient errors go back
// to the work queue, with its backoff; client-go's watches likewise), so its
// next attempt comes up to one outage length after the API is back.
// A controller restart after that starts afresh, without backoff — for the
// objects of its shard: shard's restarts (outage.shard) end it early; every
// restart does when shard is "" (a run not sharded, or an object of no known
// Bundle).
func (o *oracle) effectiveEnd(out outage, shard string) time.Time {
	if out.end.IsZero() || out.what != outageAPIServer {
		return out.end
	}
	end := out.end.Add(out.end.Sub(out.start))
	for _, restart := range o.outages {
		if restart.what == outageController && !restart.stale && !restart.end.IsZero() && restart.start.After(out.end) && restart.end.Before(end) &&
			(shard == "" || restart.shard == shard) {
			end = restart.end
		}
	}
	return end
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func limboAnnotations(meta metav1.ObjectMeta) map[string]string {
	out := map[string]string{}
	for k, v := range meta.Annotations {
		if strings.HasPrefix(k, "limbo.dev/") {
			out[strings.TrimPrefix(k, "limbo.dev/")] = v
		}
	}
	for k, v := range meta.Labels {
		if strings.HasPrefix(k, "limbo.dev/") {
			out["label:"+strings.TrimPrefix(k, "limbo.dev/")] = v
		}
	}
	if uid := controllerUID(meta); uid != "" {
		out["controller"] = short(uid)
	}
	return out
}

// adjust moves a due time past every outage that overlaps the tolerance
// window after it: limbo cannot delete while it is down. The result is far in
// the future while such an outage lasts. tls are the shards of the Bundles
// whose controllers must act (see outagesFor): none, every outage counts.
func (o *oracle) adjust(due time.Time, tls ...shardLog) time.Time {
	outs := o.outagesFor(tls...)
	for changed := true; changed; {
		changed = false
		for _, out := range outs {
			end := out.end
			if out.start.After(due.Add(lateTolerance)) || (!end.IsZero() && !end.After(due)) {
				continue
			}
			if end.IsZero() {
				return due.Add(24 * time.Hour)
			}
			due, changed = end, true
		}
	}
	return due
}

// dueLocked is when limbo must have deleted the live object of m, and false
// when limbo must not delete it (or it is not limbo's to delete).
func (o *oracle) dueLocked(m *objectModel, now time.Time) (time.Time, bool) {
	inc := m.live
	if inc == nil || inc.deleted || inc.forced || isOpen(m.desired) || isOpen(m.protected) || m.foreign || o.heldNow(inc) {
		return time.Time{}, false
	}
	if o.fates[controllerUID(inc.meta)] == fateForeground {
		return time.Time{}, false // the garbage collector's job; checked at the end
	}
	value, ok := inc.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]
	if !ok {
		return m.undesiredAt, true
	}
	delay, err := softdelete.ParseDelay(value)
	if err != nil {
		return time.Time{}, false
	}
	due := m.undesiredAt.Add(delay)
	if stamp, ok := parseStamp(inc.meta); ok {
		due = stamp.Add(delay)
	}
	return latest(due, m.undesiredAt, inc.touchedAt), true
}

// lateToleranceOf is how late limbo may delete inc, due at due:
// lateTolerance, and for a released object while the Bundle of its name
// declares a generator (at due or after: generatorsHolding) a second more —
// the reaper holds it until that Bundle has passed its current spec or is
// deleted, which it reads every second (reaper.holdRecheck), the pass of
// another shard telling it nothing (seed 450555276: 2.5 s after that shard
// was back).
func (o *oracle) lateToleranceOf(inc *incarnation, due time.Time) time.Duration {
	if len(o.generatorsHolding(inc, due)) > 0 {
		return lateTolerance + time.Second
	}
	return lateTolerance
}

// checkOverdue reports every object whose deadline passed by more than the
// tolerance (outages taken off) and which still exists.
func (o *oracle) checkOverdue(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range o.objects {
		o.checkAdoptionLocked(m, now)
		due, ok := o.dueLocked(m, now)
		if !ok || m.live.overdue || o.busy(bundlesOf(m, m.live.meta)) {
			continue
		}
		if adjusted := o.adjust(due, o.governors(m.live, due)...); now.Sub(adjusted) > o.lateToleranceOf(m.live, due) {
			m.live.overdue = true
			o.violatef("%s (uid %s, annotations %v) still exists %v after it was due at %s (%v after outages are taken off)",
				m.name, short(m.live.uid), limboAnnotations(m.live.meta), now.Sub(due).Round(time.Millisecond),
				due.Format("15:04:05.000"), now.Sub(adjusted).Round(time.Millisecond))
		}
	}
}

// adoptionDueLocked is when m's adopter must have adopted it (adopted in
// time): the object it waits for — the same incarnation — once the Bundle that
// controls it (the giver) no longer declares it, goes through limbo as any
// orphan and is handed over at the end of its countdown, whether the giver is
// Ready or not (a hand-over deletes nothing): at stamp + delay, or, not stamped
// yet, at delay after the giver dropped it or the adopter declared it,
// whichever came later (the stamp is due then; without a delay it is handed
// over at once); or it was released already (by the giver's pass or its
// teardown: when that was seen). Never before the adopter's write, nor while
// the adopter's spec is invalid (it writes nothing) or before that error was
// fixed. False when no adoption is due: none waits, the object is not the one
// it waited for (made anew), its giver still declares it, its delay is invalid
// (never handed over), or its giver was deleted with --cascade=orphan or
// foreground (the garbage collector's part).
func (o *oracle) adoptionDueLocked(m *objectModel) (time.Time, bool) {
	a, inc := m.adopter, m.live
	if a.uid == "" || a.overdue || inc == nil || inc.deleted || inc.uid != a.object || isOpen(o.holds[holdInvalidSpec][a.uid]) {
		return time.Time{}, false
	}
	var due time.Time
	switch c := controllerUID(inc.meta); {
	case c == "":
		due = inc.seenAt
	case c == a.uid, o.fates[c] == fateOrphan, o.fates[c] == fateForeground, m.declarers[inc.meta.Labels[limbov1alpha1.LabelBundle]]:
		return time.Time{}, false
	default:
		var delay time.Duration
		if value, ok := inc.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]; ok {
			var err error
			if delay, err = softdelete.ParseDelay(value); err != nil {
				return time.Time{}, false
			}
		}
		due = latest(m.droppedAt, a.at).Add(delay)
		if deadline, ok := deadlineOf(inc.meta); ok {
			due = deadline
		}
	}
	due = latest(due, a.at, a.from, inc.touchedAt)
	if l := o.shardLogOf(a.uid); l != nil && controllerUID(inc.meta) == "" && shardOfLabels(inc.meta.Labels) != l.at(due) {
		// Released with another shard's label than the adopter's: a release
		// to an adopter writes the adopter's shard label (so that its cache
		// holds the object and the release wakes it), but one whose lookup of
		// the adopter failed keeps the giver's, and the adopter's recheck of
		// the objects in its way finds it (docs/design-decisions.md, "An
		// object's events wake the Bundles it was in the way of": only
		// objects the cache holds are seen changing).
		due = due.Add(inTheWayRecheck)
	}
	return due, true
}

// inTheWayRecheck is how often a Bundle checks again the objects in the way
// of its resources (ControlledByOther, NotOwned) that its cache may not show
// changing (pkg/controller/bundle conflictRecheckInterval).
const inTheWayRecheck = 30 * time.Second

// checkAdoptionLocked reports an adoption that did not come within
// adoptionTolerance of its due time (outages taken off, see adjust).
func (o *oracle) checkAdoptionLocked(m *objectModel, now time.Time) {
	due, ok := o.adoptionDueLocked(m)
	if !ok || o.busy(bundlesOf(m, m.live.meta)) {
		return
	}
	// The giver's controller hands it over, the adopter's adopts it.
	if adjusted := o.adjust(due, append(o.governors(m.live, due), o.shardLogOf(m.adopter.uid))...); now.Sub(adjusted) > adoptionTolerance {
		m.adopter.overdue = true
		o.violatef("not adopted in time: %s (uid %s, annotations %v) is not controlled by Bundle %s (uid %s), which declared it to adopt it at revision %d, %v after it was to be handed over at %s (%v after outages are taken off): more than %v",
			m.name, short(m.live.uid), limboAnnotations(m.live.meta), m.adopter.slot, short(m.adopter.uid), m.adopter.since,
			now.Sub(due).Round(time.Millisecond), due.Format("15:04:05.000"), now.Sub(adjusted).Round(time.Millisecond), adoptionTolerance)
	}
}

// pendingUntil is the latest time at which some object may still be due
// (outages taken off), and how many objects limbo must still delete or hand
// over. An adoption to come counts until its tolerance ends: it ends its
// adopter's hold (holdAdopting), and what the hold kept is due only from then
// on — a wait that ended while it was held found nothing due, and judged it
// leaked a moment after the adoption (seed 808322342).
func (o *oracle) pendingUntil(now time.Time) (time.Time, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var until time.Time
	n := 0
	for _, m := range o.objects {
		if due, ok := o.dueLocked(m, now); ok {
			n++
			until = latest(until, o.adjust(due, o.governors(m.live, due)...))
		}
		if due, ok := o.adoptionDueLocked(m); ok {
			n++
			until = latest(until, o.adjust(due, append(o.governors(m.live, due), o.shardLogOf(m.adopter.uid))...).Add(adoptionTolerance))
		}
	}
	return until, n
}

// finalCheck checks, once everything is due, that nothing was lost and nothing
// leaked: the objects a Bundle declares, that --cascade=orphan left behind, that
// were cancelled or whose live delay is invalid exist; every other object is
// gone; and every object a Bundle declared to adopt it was adopted.
func (o *oracle) finalCheck() {
	o.mu.Lock()
	defer o.mu.Unlock()
	names := make([]string, 0, len(o.objects))
	for name := range o.objects {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := o.objects[name]
		exists := m.live != nil && !m.live.deleted
		held := exists && o.heldNow(m.live)
		// An invalid delay on the live object: never deleted until it is made
		// valid (DESIGN §4).
		neverDue := exists && invalidDelay(m.live.meta)
		keep := isOpen(m.desired) || isOpen(m.protected) || m.foreign || held || neverDue
		switch {
		case keep && !exists:
			o.violatef("lost: %s should exist (declared %v, left behind %v, cancelled %v) but does not",
				name, isOpen(m.desired), isOpen(m.protected), m.foreign)
		case !keep && exists && !m.live.overdue:
			o.violatef("leaked: %s (uid %s, annotations %v) should be gone but exists", name, short(m.live.uid), limboAnnotations(m.live.meta))
		case m.adopter.uid != "" && exists:
			// Its adopter is Ready once it adopted it: the Bundle it left
			// handed it over at the end of its countdown, or released it in
			// its teardown (the generator holds neither back meanwhile).
			o.violatef("not adopted: %s (uid %s, annotations %v) is not controlled by Bundle %s (uid %s), which declared it to adopt it at revision %d",
				name, short(m.live.uid), limboAnnotations(m.live.meta), m.adopter.slot, short(m.adopter.uid), m.adopter.since)
		}
	}
}

// formatCounts is counts as sorted name=count pairs.
func formatCounts(counts map[string]int) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("%s=%d", name, counts[name]))
	}
	return strings.Join(out, " ")
}

// report is the run's figures, one line each.
func (o *oracle) report() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ops []string
	total := 0
	for op, n := range o.stats.ops {
		ops = append(ops, fmt.Sprintf("%s=%d", op, n))
		total += n
	}
	sort.Strings(ops)
	var chaos []string
	for event, n := range o.stats.chaos {
		chaos = append(chaos, fmt.Sprintf("%s=%d", event, n))
	}
	sort.Strings(chaos)
	var notReady []string
	for op, n := range o.stats.opsNotReady {
		notReady = append(notReady, fmt.Sprintf("%s=%d", op, n))
	}
	sort.Strings(notReady)
	s := o.stats
	return append([]string{
		fmt.Sprintf("operations: %d (%s)", total, strings.Join(ops, " ")),
		fmt.Sprintf("deletions: %d by limbo (%d without delay, %d generated by a plugin), %d forced by the generator, %d by --cascade=foreground",
			s.engineDeletions, s.immediateDeletions, s.generatedDeletions, s.forcedDeletions, s.foregroundDeletions),
		fmt.Sprintf("cancels: %d; controller outages: %d; kube-apiserver restarts: %d (watch relisted %d times); Bundles the garbage collector still held: %d",
			s.cancels, s.controllerRestarts, s.apiRestarts, s.watchGaps, s.collectorHolds),
		fmt.Sprintf("chaos: %s; objects another depended on that a teardown deleted or released (order checked): %d", strings.Join(chaos, " "), s.orderedTeardownSteps),
		fmt.Sprintf("operations while a gate was not Ready: %s; orphans kept by a hold until it ended: %d while the spec was invalid, %d while a resource was not Ready, %d while a resource waited to adopt an object",
			strings.Join(notReady, " "), s.held[holdInvalidSpec.name], s.held[holdNotReady.name], s.held[holdAdopting.name]),
		fmt.Sprintf("hand-overs: %s (adopted: the same object, not made anew); the longest wait for an adoption %v (%s)",
			formatCounts(s.handOvers), s.maxAdoptionWait.Round(time.Millisecond), s.maxAdoptionWaitObject),
		fmt.Sprintf("shard moves: %s", formatCounts(s.moves)),
		fmt.Sprintf("max lateness: %v raw (%s); %v with outages taken off (%s)",
			s.maxLateness.Round(time.Millisecond), s.maxLatenessObject, s.maxAdjustedLateness.Round(time.Millisecond), s.maxAdjustedLatenessObject),
		fmt.Sprintf("violations: %d (and %d deletions of objects declared again while a kube-apiserver outage hid it from limbo until their deadline)", len(o.violations), s.outageRaces),
	}, s.collectorEvidence...)
}
