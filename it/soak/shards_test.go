package soak

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// The soak runs the controllers sharded, the way docs/install.md ("Sharding")
// does: Bundles labelled limbo.dev/shard=a are shard a's, a single process
// without leader election; every other Bundle is the rest's, two replicas with
// leader election. The chaos kills both shards' processes, each on its own
// (see replicaChaos). A Bundle is created in either shard, and move-shard
// relabels it to the other.
const (
	shardLabel = "limbo.dev/shard"
	shardA     = "a"
	shardRest  = "rest"
)

// shardSelectors are the shards' --watch-label-selector values.
var shardSelectors = map[string]string{shardA: shardLabel + "=" + shardA, shardRest: "!" + shardLabel}

// shardLabelValue is the value of shardLabel that puts a Bundle in shard (nil:
// none, the rest), as a merge patch writes it.
func shardLabelValue(shard string) any {
	if shard == shardA {
		return shardA
	}
	return nil
}

// shardOfLabels is the shard an object with these labels is in.
func shardOfLabels(labels map[string]string) string {
	if labels[shardLabel] == shardA {
		return shardA
	}
	return shardRest
}

func otherShard(shard string) string {
	if shard == shardA {
		return shardRest
	}
	return shardA
}

// startShardA starts shard a's controller: one process, without leader
// election, logging among the artifacts. Its outages are its Bundles'
// objects' only (see outage.shard).
func (r *soakRun) startShardA(t *testing.T, limboBin string) *controllerprocess.Process {
	t.Helper()
	p, err := controllerprocess.Start(r.ctx, shardConfig(r, limboBin, shardA))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shardConfig is the configuration of a process of shard without leader
// election, logging among the run's artifacts.
func shardConfig(r *soakRun, limboBin, shard string) controllerprocess.Config {
	return controllerprocess.Config{Bin: limboBin, Kubeconfig: env.Cluster.KubeconfigPath,
		Name: "limbo controller shard " + shard, LogPath: filepath.Join(r.artifacts, "controller-shard-"+shard+".log"),
		Args: []string{"--zap-log-level", "info", "--leader-elect=false", "--watch-label-selector", shardSelectors[shard]}}
}

// --- the oracle's side ---

// shardSpan: from time from on, a Bundle incarnation was in shard.
type shardSpan struct {
	from  time.Time
	shard string
	// gone: from here on the Bundle acts on nothing (deleted; see
	// oracle.governors), so no outage counts.
	gone bool
}

// shardLog is the shards a Bundle incarnation was in, oldest first: the one
// it was created in, then one per move-shard, from the time its write
// returned. Which shard's controller acts on a Bundle's objects (its passes,
// its teardown) is the one the Bundle is in; a move is not an outage (the new
// shard's first pass takes the Bundle over, docs/install.md "Sharding").
type shardLog []shardSpan

// at is the shard of the log at time t (before the first span: the first).
func (l shardLog) at(t time.Time) string {
	shard := l[0].shard
	for _, s := range l {
		if s.from.After(t) {
			break
		}
		shard = s.shard
	}
	return shard
}

// inShard records that Bundle incarnation uid is in shard from time at on
// (its creation, or a move-shard's write).
func (o *oracle) inShard(bundle string, uid types.UID, shard string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shards[uid] = append(o.shards[uid], shardSpan{from: at, shard: shard})
	o.logf("Bundle %s (uid %s) in shard %s", bundle, short(uid), shard)
}

// shardLogOf is the shard log of Bundle incarnation uid; nil when the run
// is not sharded or the Bundle is unknown (every outage counts then).
func (o *oracle) shardLogOf(uid types.UID) shardLog {
	if !o.sharded {
		return nil
	}
	return o.shards[uid]
}

// governors are the shard logs by which incarnation inc, in the state last
// seen, is acted on: its controller's (the Bundle's passes and teardown,
// whatever shard label the object still carries); without a controller
// (released by a teardown), its last controller's until the release was seen,
// the reaper's of the shard its labels name (which a release keeps) from then
// on: until the release the countdown was that Bundle's to end (an object in
// limbo of a Bundle moved to the rest and deleted while the rest was down over
// the deadline, released once it was back: seed 241325230). A release not
// seen (a watch gap): the reaper's alone. And while the Bundle of its name
// declares a generator resource at due or after (generatorsHolding), that
// Bundle's too, until its deletion: the reaper holds the object until that
// Bundle has passed its current spec, which may make it again (seed
// 450555276). Nil when the run is not sharded.
func (o *oracle) governors(inc *incarnation, due time.Time) []shardLog {
	if !o.sharded {
		return nil
	}
	if l := o.shards[controllerUID(inc.meta)]; l != nil {
		return []shardLog{l}
	}
	reaper := shardSpan{from: inc.releasedAt, shard: shardOfLabels(inc.meta.Labels)}
	var l shardLog
	if !inc.releasedAt.IsZero() {
		for _, span := range o.shards[inc.controller] {
			if span.from.Before(inc.releasedAt) {
				l = append(l, span)
			}
		}
	}
	logs := []shardLog{append(l, reaper)}
	for _, span := range o.generatorsHolding(inc, due) {
		l := o.shards[span.uid]
		if l == nil {
			continue
		}
		if !span.until.IsZero() {
			l = append(slices.Clip(l), shardSpan{from: span.until, gone: true})
		}
		logs = append(logs, l)
	}
	return logs
}

// outagesFor are the outages that kept limbo from acting on an object acted
// on by the controllers of tls (any of them: an adoption needs the giver's and
// the adopter's), each ending when limbo is back for it (effectiveEnd). A log
// is cut into its spans, one per shard the Bundle was in: a controller outage
// of a shard (outage.shard) counts only over the spans in that shard — a
// Bundle moved out of it during the outage is acted on by the other shard's
// first pass from the move on, one moved into it waits from the move until
// the outage ends — and a kube-apiserver outage counts over every span, each
// ending when that span's shard is back (a shard restarted afresh after the
// API came back ends it early for its span only: seed 995699865, a Bundle
// that moved from a shard restarted afresh to one still backing off). A nil
// log, or a run not sharded: every outage, whole.
func (o *oracle) outagesFor(tls ...shardLog) []outage {
	if len(tls) == 0 {
		tls = []shardLog{nil}
	}
	var outs []outage
	for _, tl := range tls {
		for _, out := range o.outages {
			if tl == nil || (out.what == outageController && out.shard == "") {
				out.end = o.effectiveEnd(out, "")
				outs = append(outs, out)
				continue
			}
			for i, span := range tl {
				if span.gone || (out.what == outageController && span.shard != out.shard) {
					continue
				}
				piece := out
				piece.end = o.effectiveEnd(out, span.shard)
				if i > 0 && span.from.After(piece.start) {
					piece.start = span.from
				}
				if i+1 < len(tl) && (piece.end.IsZero() || tl[i+1].from.Before(piece.end)) {
					piece.end = tl[i+1].from
				}
				if piece.end.IsZero() || piece.end.After(piece.start) {
					outs = append(outs, piece)
				}
			}
		}
	}
	return outs
}

// The variants of move-shard a run must see (see notCovered): in the same
// write that drops a resource, or that declares one (new, or back from
// limbo); while an object of the Bundle counts down in limbo; while a
// resource of it is not Ready; and to either shard.
const (
	moveWithDrop = "with-drop"
	moveWithAdd  = "with-add"
	moveInLimbo  = "in-limbo"
	moveNotReady = "not-ready"
	moveToA      = "to-a"
	moveToRest   = "to-rest"
	// moveDuringHandOver: the Bundle gives an object away, or waits to adopt
	// one (counted, not required).
	moveDuringHandOver = "during-hand-over"
)

// missingMoves are the variants of move-shard that counts lacks.
func missingMoves(counts map[string]int) []string {
	return missingOf(counts, moveWithDrop, moveWithAdd, moveInLimbo, moveNotReady, moveToA, moveToRest)
}

func (o *oracle) moved(variants []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range variants {
		o.stats.moves[v]++
	}
}

func (o *oracle) moveCounts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.stats.moves)
}

// --- the generator's side ---

// shardMove is a move of a Bundle to another shard made in the write of an
// operation that edits its spec (or alone): the write carries the new
// shard's label (writeSpec), and records it once made.
type shardMove struct {
	variants []string
}

// moveShard relabels s's Bundle to the other shard (install.md: "Moving a
// Bundle to another shard"), in the same write that drops a resource or
// declares one (new, or back from limbo), or alone; until a run saw each,
// while an object of it counts down in limbo (a resource with a delay of
// 3 s or more removed first, stamped) and while its gate is not Ready
// (mark-unready first); and while it gives an object away or waits to adopt
// one (counted as during-hand-over). Nothing of the oracle's rules changes
// across a move: the new shard takes over at its first pass.
func (g *generator) moveShard(ctx context.Context, s *slot) bool {
	// An adopter moved after the object was released to it finds the object,
	// which carries the shard label it had then, at its 30 s recheck of the
	// objects in its way (the oracle allows that, adoptionDueLocked).
	handingOver := g.oracle.givingAway(s.uid) || g.oracle.adoptingInto(s.uid)
	missing := missingMoves(g.oracle.moveCounts())
	if slices.Contains(missing, moveNotReady) && s.gated && !s.gateUnready && !handingOver {
		// (Not an adopter's gate: one not Ready may block its adoption,
		// which the model does not foresee; see handOver.)
		g.markUnready(ctx, s)
	}
	if slices.Contains(missing, moveInLimbo) && len(g.countingOrphans(s)) == 0 {
		if long := longDelayed(s); len(long) > 0 && !s.gateUnready {
			g.settle(ctx, s)
			if !g.removeResource(ctx, s, long[s.rng.IntN(len(long))], nil) {
				return false
			}
			if _, _, ok := g.stampedOrphans(ctx, s); !ok {
				return false
			}
		}
	}
	edit := []string{"", moveWithDrop, moveWithAdd}[s.rng.IntN(3)]
	switch {
	case slices.Contains(missing, moveWithDrop) && len(s.resources) > 0:
		edit = moveWithDrop
	case slices.Contains(missing, moveWithAdd):
		edit = moveWithAdd
	}
	mv := &shardMove{variants: []string{map[string]string{shardA: moveToA, shardRest: moveToRest}[otherShard(s.shard)]}}
	if len(g.countingOrphans(s)) > 0 {
		mv.variants = append(mv.variants, moveInLimbo)
	}
	if s.gateUnready {
		mv.variants = append(mv.variants, moveNotReady)
	}
	if handingOver {
		mv.variants = append(mv.variants, moveDuringHandOver)
	}
	switch edit {
	case moveWithDrop:
		if len(s.resources) > 0 {
			g.settle(ctx, s)
			keys := slices.Sorted(maps.Keys(s.resources))
			mv.variants = append(mv.variants, moveWithDrop)
			return g.removeResource(ctx, s, keys[s.rng.IntN(len(keys))], mv)
		}
	case moveWithAdd:
		with := &shardMove{variants: append(slices.Clone(mv.variants), moveWithAdd)}
		if g.addResource(ctx, s, with) {
			return true
		}
	}
	return g.writeSpecAs(ctx, s, "alone", "", mv, nil, nil)
}

// countingOrphans are the objects s's Bundle controls and no longer declares
// whose countdown runs (a valid delay, stamped).
func (g *generator) countingOrphans(s *slot) []string {
	var names []string
	for _, name := range g.oracle.controlled(s.uid) {
		v := g.oracle.view(name)
		if _, stamped := parseStamp(v.meta); !s.declaresObject(name) && v.exists && controllerUID(v.meta) == s.uid && counting(v) && stamped {
			names = append(names, name)
		}
	}
	return names
}

// writeSpecAs writes s's spec (with allowEmpty when it declares nothing) as
// operation op, once check (if any) passes right before the write, and passes
// the revision written to record, the model's update of the edit. With a move
// (mv), the operation is move-shard and the write puts the Bundle in the
// other shard, recorded once it returned; the shard is taken back if the
// write fails.
func (g *generator) writeSpecAs(ctx context.Context, s *slot, op, detail string, mv *shardMove, check func() error, record func(rv int64)) bool {
	from := s.shard
	if mv != nil {
		detail = fmt.Sprintf("%s->%s %v %s %s", from, otherShard(from), mv.variants, op, detail)
		op, s.shard = "move-shard", otherShard(from)
	}
	err := g.mutate(s, op, detail, func() error {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		rv, err := g.writeSpec(ctx, s, len(s.resources) == 0)
		if err != nil {
			return err
		}
		if mv != nil {
			g.oracle.inShard(s.name, s.uid, s.shard, time.Now())
		}
		if record != nil {
			record(rv)
		}
		return nil
	})
	if err != nil {
		s.shard = from
		return false
	}
	if mv != nil {
		g.oracle.moved(mv.variants)
	}
	return true
}
