package soak

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// The route soak's tolerances.
const (
	// liveServerGuard: a route removed while a server has held its next hop for
	// this long was removed while desired. Shorter presences race the removal's
	// last check (its server listing, a moment before the update): no API
	// orders the two.
	liveServerGuard = 3 * time.Second
	// desiredAgainGrace: a server back this long, with the controller up
	// throughout, has been seen by a plan, which cancels the route's Tombstone
	// (a poll every second, plus its jitter and the pass).
	desiredAgainGrace = 8 * time.Second
	// judgeAfter is how long after a removal it is judged: the Tombstone watch
	// has caught up by then.
	judgeAfter = 3 * time.Second
)

// span is a time span [from, to); to is zero while it lasts.
type span struct{ from, to time.Time }

// hopModel is one route and what the generator did to its next hop's server.
type hopModel struct {
	route openstacksim.Route
	// serverID is the server holding the next hop; "" while there is none.
	serverID string
	// present are the spans in which a server held the next hop: from when its
	// create returned, to when its delete was sent.
	present []span
	// onRouter is whether the router holds the route.
	onRouter bool
}

func (h *hopModel) presentAt(t time.Time) (span, bool) {
	for _, s := range h.present {
		if !s.from.After(t) && (s.to.IsZero() || s.to.After(t)) {
			return s, true
		}
	}
	return span{}, false
}

// tombstoneRecord is one Tombstone (one UID) as the watch saw it.
type tombstoneRecord struct {
	uid     types.UID
	name    string
	itemID  string
	created time.Time // metadata.creationTimestamp, to the second
	// deadline is its stamp plus its delay, as last seen; valid when both parse.
	deadline time.Time
	valid    bool
	gone     time.Time // when the watch saw it go; zero while it is there
}

// force is a `kubectl delete tombstone` the generator ran.
type force struct {
	name string
	at   time.Time
}

// removal is a route limbo removed from the router.
type removal struct {
	id string
	at time.Time
}

// routeOracle checks every route removal of the route soak against the
// generator's record of the servers and a watch of the Tombstones:
//
//   - a route is never removed while a server has held its next hop for
//     liveServerGuard (its removal's last check refuses it);
//   - a route is removed only through a Tombstone of it, and not before that
//     Tombstone's deadline unless the Tombstone was forced (DESIGN §4);
//   - a server back for desiredAgainGrace while the controller was up cancels
//     the countdown: a route removed through a Tombstone that outlived such a
//     presence is a violation;
//   - at the end, nothing leaked: every route without a server is removed and
//     no Tombstone is left.
type routeOracle struct {
	journal                         // and its lock, which guards everything
	hops       map[string]*hopModel // by route ID
	tombstones map[types.UID]*tombstoneRecord
	forces     []force
	removals   []removal // not yet judged
	outages    []outage
	// watchingSince is when the Tombstone watch last (re)connected.
	watchingSince time.Time
	ops           map[string]int
	removed       int
}

func newRouteOracle() *routeOracle {
	return &routeOracle{hops: map[string]*hopModel{}, tombstones: map[types.UID]*tombstoneRecord{}, ops: map[string]int{}}
}

func (o *routeOracle) countOp(op string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops[op]++
}

func (o *routeOracle) opsDone() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, k := range o.ops {
		n += k
	}
	return n
}

func (o *routeOracle) outageStarted(what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outages = append(o.outages, outage{what: what, start: time.Now()})
	o.logf("outage: %s", what)
}

func (o *routeOracle) outageEnded(what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.outages) - 1; i >= 0; i-- {
		if o.outages[i].what == what && o.outages[i].end.IsZero() {
			o.outages[i].end = time.Now()
			o.logf("outage over: %s", what)
			return
		}
	}
}

func (o *routeOracle) watchingAfter(t time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watchingSince.After(t)
}

// --- what the generator did ---

// addHop records a route on the router, with a server on its next hop (serverID)
// or none ("").
func (o *routeOracle) addHop(r openstacksim.Route, serverID string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := &hopModel{route: r, onRouter: true}
	o.hops[routeIDOf(r)] = h
	if serverID != "" {
		h.serverID, h.present = serverID, []span{{from: at}}
	}
}

// serverUp records a server created on the hop of route id; at is when its
// create returned.
func (o *routeOracle) serverUp(id, serverID string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.hops[id]
	h.serverID = serverID
	h.present = append(h.present, span{from: at})
	o.logf("server %s up on %s", serverID, id)
}

// serverDown records the server of route id's hop deleted; at is before the
// delete was sent.
func (o *routeOracle) serverDown(id string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.hops[id]
	if n := len(h.present); n > 0 && h.present[n-1].to.IsZero() {
		h.present[n-1].to = at
	}
	o.logf("server %s down on %s", h.serverID, id)
	h.serverID = ""
}

// forced records a `kubectl delete tombstone name`; at is before it ran.
func (o *routeOracle) forced(name string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forces = append(o.forces, force{name: name, at: at})
	o.logf("force Tombstone %s", name)
}

// --- what happened ---

// routesChanged is the simulator's OnRoutesChanged: every route that left the
// router was removed by limbo (the generator only adds routes).
func (o *routeOracle) routesChanged(before, after []openstacksim.Route) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range after {
		if h := o.hops[routeIDOf(r)]; h != nil {
			h.onRouter = true
		}
	}
	for _, r := range before {
		if slices.Contains(after, r) {
			continue
		}
		id := routeIDOf(r)
		o.removed++
		o.logf("route %s removed", id)
		h := o.hops[id]
		if h == nil {
			o.violatef("route %s removed: not one of the run's routes", id)
			continue
		}
		h.onRouter = false
		if s, ok := h.presentAt(now); ok && now.Sub(s.from) >= liveServerGuard {
			o.violatef("route %s removed while server %s had held its next hop for %v", id, h.serverID, now.Sub(s.from).Round(time.Millisecond))
		}
		o.removals = append(o.removals, removal{id: id, at: now})
	}
}

// observe records a Tombstone as the watch saw it; gone: it was deleted.
func (o *routeOracle) observe(ts *limbov1alpha1.Tombstone, gone bool, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rec := o.tombstones[ts.UID]
	if rec == nil {
		rec = &tombstoneRecord{uid: ts.UID, name: ts.Name, itemID: ts.Spec.Item.ID, created: ts.CreationTimestamp.Time}
		o.tombstones[ts.UID] = rec
		o.logf("Tombstone %s (%s) of %s, stamp %s, delay %q", ts.Name, short(ts.UID), rec.itemID,
			ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp], ts.Annotations[limbov1alpha1.AnnotationDeletionDelay])
	}
	stamp, err1 := time.Parse(time.RFC3339, ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	delay, err2 := softdelete.ParseDelay(ts.Annotations[limbov1alpha1.AnnotationDeletionDelay])
	rec.deadline, rec.valid = stamp.Add(delay), err1 == nil && err2 == nil
	if gone && rec.gone.IsZero() {
		rec.gone = at
		o.logf("Tombstone %s (%s) gone", ts.Name, short(ts.UID))
	}
}

// goneUnseen records the Tombstones a re-list no longer finds as gone at.
func (o *routeOracle) goneUnseen(listed map[types.UID]bool, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for uid, rec := range o.tombstones {
		if !listed[uid] && rec.gone.IsZero() {
			rec.gone = at
		}
	}
}

// judge judges the removals made at least judgeAfter before now.
func (o *routeOracle) judge(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	kept := o.removals[:0]
	for _, r := range o.removals {
		if now.Sub(r.at) < judgeAfter {
			kept = append(kept, r)
			continue
		}
		o.judgeRemoval(r)
	}
	o.removals = kept
}

// judgeRemoval checks one removal against the Tombstone it was made through: of
// the Tombstones of the route created by then and not seen gone before it, the
// newest that allows it (its deadline passed, or forced), else the newest. A
// creation time is to the second, so a Tombstone made just after the removal, in
// the same second, for the route added again, counts as made by then: the
// newest alone would blame the removal on it.
func (o *routeOracle) judgeRemoval(r removal) {
	allows := func(rec *tombstoneRecord) bool {
		forced := slices.ContainsFunc(o.forces, func(f force) bool {
			return f.name == rec.name && !f.at.Before(rec.created.Add(-time.Second)) && !f.at.After(r.at)
		})
		return forced || !rec.valid || !r.at.Before(rec.deadline)
	}
	var through, allowedBy *tombstoneRecord
	for _, rec := range o.tombstones {
		// created is to the second, gone is when the watch saw it: a second of
		// slack on either side.
		if rec.itemID != r.id || rec.created.After(r.at) || (!rec.gone.IsZero() && rec.gone.Before(r.at.Add(-time.Second))) {
			continue
		}
		if through == nil || rec.created.After(through.created) {
			through = rec
		}
		if allows(rec) && (allowedBy == nil || rec.created.After(allowedBy.created)) {
			allowedBy = rec
		}
	}
	if through == nil {
		o.violatef("route %s removed at %s without a Tombstone", r.id, r.at.Format("15:04:05.000"))
		return
	}
	if allowedBy != nil {
		through = allowedBy
	} else {
		o.violatef("route %s removed at %s, %v before the deadline of Tombstone %s (%s)", r.id, r.at.Format("15:04:05.000"),
			through.deadline.Sub(r.at).Round(time.Millisecond), through.name, short(through.uid))
	}
	// A server back long enough, with the controller up, was seen by a plan:
	// the Tombstone should have been cancelled, not carried out.
	for _, s := range o.hops[r.id].present {
		from := latest(s.from, through.created)
		to := s.to
		if to.IsZero() || to.After(r.at) {
			to = r.at
		}
		if to.Sub(from) >= desiredAgainGrace && !overlaps(o.outages, from, to, func(out outage) time.Time { return out.end }) {
			o.violatef("route %s removed at %s through Tombstone %s (%s), though its next hop had a server from %s to %s",
				r.id, r.at.Format("15:04:05.000"), through.name, short(through.uid), from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		}
	}
}

// finalCheck, once every countdown has ended and the controller has had time
// to act: routes without a server removed, no Tombstone left.
func (o *routeOracle) finalCheck() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(o.hops)) {
		// A route of a server that came back after its removal stays removed:
		// route-gc never adds routes (the cloud's route controller does; here,
		// the generator). A removal while the server was there is judged when
		// it happens.
		if h := o.hops[id]; h.serverID == "" && h.onRouter {
			problems = append(problems, fmt.Sprintf("route %s of a gone server is still on the router (leaked)", id))
		}
	}
	for _, rec := range o.tombstones {
		if rec.gone.IsZero() {
			problems = append(problems, fmt.Sprintf("Tombstone %s of %s is left", rec.name, rec.itemID))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%v", problems)
	}
	return nil
}

// recordFinal records what finalCheck still finds as violations.
func (o *routeOracle) recordFinal(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.violatef("at the end: %v", err)
	}
	for _, r := range o.removals {
		o.judgeRemoval(r)
	}
	o.removals = nil
}

func (o *routeOracle) report() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ops []string
	for _, op := range slices.Sorted(maps.Keys(o.ops)) {
		ops = append(ops, fmt.Sprintf("%s %d", op, o.ops[op]))
	}
	restarts := 0
	for _, out := range o.outages {
		if out.what == outageController {
			restarts++
		}
	}
	return []string{
		fmt.Sprintf("operations: %v", ops),
		fmt.Sprintf("routes removed %d, Tombstones %d, forced %d, controller restarts %d", o.removed, len(o.tombstones), len(o.forces), restarts),
	}
}

func routeIDOf(r openstacksim.Route) string { return r.Destination + "->" + r.NextHop }
