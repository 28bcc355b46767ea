package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// slots is how many Bundles the generator drives at once.
const slots = 6

// TestSoak runs the generator against sharded controllers (see shardA): shard
// a's process, and the rest's two replicas with leader election, one of them
// (shard a's, the rest's leader or its standby) killed and restarted at
// random; and fails on any violation the oracle finds.
func TestSoak(t *testing.T) {
	run := startSoak(t, "soak", fmt.Sprintf("%d Bundles", slots))
	ctx, namespace, seed, ops := run.ctx, run.namespace, run.seed, run.ops
	bin := t.TempDir()
	kubectlLimbo, err := controllerprocess.BuildCommand(ctx, env.RepoRoot, bin, "kubectl-limbo")
	if err != nil {
		t.Fatal(err)
	}

	o := newOracle()
	o.sharded = true
	run.keepLog(t, &o.journal)
	list, err := env.Clientset.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		o.watch(watchCtx, env.Clientset, namespace, list.ResourceVersion)
	}()
	defer func() { stopWatch(); <-watchDone }()
	go func() {
		for watchCtx.Err() == nil {
			o.checkOverdue(time.Now())
			sleep(watchCtx, 250*time.Millisecond)
		}
	}()

	pause := &sync.RWMutex{}
	limboBin, err := controllerprocess.Build(ctx, env.RepoRoot, bin)
	if err != nil {
		t.Fatal(err)
	}
	chaos := &replicaChaos{oracle: o, shardA: run.startShardA(t, limboBin), replicas: run.startReplicas(t, limboBin), pause: pause, rng: rand.New(rand.NewPCG(uint64(seed), slots)), ops: ops}
	chaos.started = []time.Time{time.Now(), time.Now()}
	defer chaos.killAll() // the last ones started
	if err := chaos.waitLeader(ctx, leaderTimeout); err != nil {
		t.Fatal(err)
	}

	quiet := rest.CopyConfig(env.Config)
	quiet.WarningHandler = rest.NoWarnings{} // spec.allowEmpty, while the CRD lacks it
	dyn, err := dynamic.NewForConfig(quiet)
	if err != nil {
		t.Fatal(err)
	}
	g := &generator{
		oracle: o, namespace: namespace, clientset: env.Clientset, dynamic: dyn,
		kubectl: kubectlLimbo, kubeconfig: env.Cluster.KubeconfigPath, pause: pause, skip: map[string]bool{},
	}
	for _, op := range strings.Split(*skipFlag, ",") {
		if op = strings.TrimSpace(op); op != "" {
			g.skip[op] = true
			t.Logf("soak: skipping %s", op)
		}
	}
	started := time.Now()
	var workers sync.WaitGroup
	all := make([]*slot, slots)
	for i := range slots {
		// Half the Bundles have a gate whose readiness the generator sets.
		all[i] = &slot{name: fmt.Sprintf("b%d", i), rng: rand.New(rand.NewPCG(uint64(seed), uint64(i))), gated: i%2 == 0}
	}
	g.slots = all
	chaos.drift = g.driftWhileDown
	for i, s := range all {
		n := ops / slots
		if i < ops%slots {
			n++
		}
		workers.Go(func() { g.run(ctx, s, n) })
	}
	chaosCtx, stopChaos := context.WithCancel(ctx)
	chaosDone := make(chan error, 1)
	go func() { chaosDone <- chaos.run(chaosCtx) }()
	workers.Wait()
	stopChaos()
	if err := <-chaosDone; err != nil {
		t.Fatal(err)
	}
	if !chaos.apiRestarted {
		// A run too short to reach it still restarts kube-apiserver once.
		if err := chaos.restartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := chaos.finish(ctx); err != nil {
		t.Fatal(err)
	}
	opsTime := time.Since(started)

	// A spec error that a worker's last operation wrote stays, and with it
	// its hold; but an object its spec declares that a gate not Ready blocked
	// before the error (settle skips those) is never made while it lasts
	// (limbo writes nothing of the Bundle), and would be lost: that error is
	// fixed (seed 447453100).
	missing := func(s *slot) bool {
		return slices.ContainsFunc(g.objectNames(s, slices.Collect(maps.Keys(s.resources))...), func(name string) bool { return !o.view(name).exists })
	}
	for _, s := range all {
		if s.uid != "" && s.invalid != "" && missing(s) {
			sleep(ctx, time.Until(s.holdUntil))
			g.fixSpec(ctx, s)
		}
	}
	// A guard stays too, and with it its hold; but an object its emptied spec
	// keeps that was deleted meanwhile (another Bundle's force-delete of the
	// object it handed over to this one) is not made again while it lasts
	// (limbo applies nothing of an emptied spec), and would be lost: that
	// guard ends (seed 221804979).
	for _, s := range all {
		if s.uid != "" && s.guarded && missing(s) {
			sleep(ctx, time.Until(s.holdUntil))
			g.restore(ctx, s)
		}
	}
	// Every gate Ready again: what the Bundles held is due, and the
	// resources they blocked are applied.
	for _, s := range all {
		if s.uid != "" && s.gateUnready {
			g.markReady(ctx, s)
		}
	}
	// Let every countdown end, then check what is left.
	waitCountdowns := func() {
		for ctx.Err() == nil {
			until, n := o.pendingUntil(time.Now())
			if n == 0 || time.Now().After(until.Add(lateTolerance+time.Second)) {
				break
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
	waitCountdowns()
	o.checkOverdue(time.Now())
	for _, s := range all {
		if s.uid != "" && !s.guarded {
			g.settle(ctx, s)
			if s.invalid == "" { // limbo writes nothing of a Bundle whose spec is invalid
				g.keptAsDeclared(ctx, s)
			}
		}
	}
	// A hold that ended meanwhile — an adopter that made the object anew
	// once its gate was Ready (seed 566159431) — made what it kept due only
	// now.
	waitCountdowns()
	o.checkOverdue(time.Now())
	o.finalCheck()
	if err := chaos.shardAAlive(); err != nil {
		t.Error(err)
	}

	o.mu.Lock()
	violations := o.violations
	o.mu.Unlock()
	run.report(t, append(o.report(), fmt.Sprintf("time: %v of operations, %v in all", opsTime.Round(time.Second), time.Since(started).Round(time.Second))),
		violations, chaos.logPaths())
	if missing := o.notCovered(g); len(missing) > 0 {
		msg := fmt.Sprintf("soak: coverage: never happened in %d operations with seed %d: %s", ops, seed, strings.Join(missing, ", "))
		if ops < coverageOps {
			t.Log(msg + " (not a failure below the short form's operations)")
		} else {
			t.Error(msg)
		}
	}
}

// coverageOps is the short form's number of operations: a run of at least as
// many fails when one of the generator's operations, or of the chaos's kinds
// of kills, never happened.
const coverageOps = 300

// notCovered lists what a run was to exercise and did not: each operation the
// generator performs (unless skipped), every kind of kill (the rest's leader,
// its standby, shard a's process), a drift while a shard's controllers were
// down, and the kube-apiserver restart, a
// background teardown that deleted or released an object another one
// depended on (its order checked), an orphan that a gate not Ready kept, and
// each variant of hand-over and an object it adopted, and a deletion of an
// object a generator resource made.
func (o *oracle) notCovered(g *generator) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var missing []string
	for _, name := range g.expectedOps() {
		if o.stats.ops[name] == 0 {
			missing = append(missing, name)
		}
	}
	for _, event := range []string{"kill-leader", "kill-standby", "kill-shard-a", "restart-kube-apiserver", "drift-while-down"} {
		if o.stats.chaos[event] == 0 {
			missing = append(missing, event)
		}
	}
	if !g.skip["delete-bundle-background"] && o.stats.orderedTeardownSteps == 0 {
		missing = append(missing, "a teardown that deleted or released an object another one depended on")
	}
	if o.stats.generatedDeletions == 0 {
		missing = append(missing, "a deletion of an object a plugin generated")
	}
	if !g.skip["mark-unready"] && o.stats.held[holdNotReady.name] == 0 {
		missing = append(missing, "an orphan kept while a resource of its Bundle was not Ready")
	}
	if !g.skip["hand-over"] {
		for _, v := range missingVariants(o.stats.handOvers) {
			missing = append(missing, "a hand-over "+v)
		}
	}
	if !g.skip["move-shard"] {
		for _, v := range missingMoves(o.stats.moves) {
			missing = append(missing, "a move-shard "+v)
		}
	}
	return missing
}

// chaos kills and restarts one of the controllers at random, and restarts
// kube-apiserver once, a third of the way into the run (unless apiRestarted is
// set from the start). Its oracle is told of every controller outage as
// limbo's (not of a shard: see observer).
type chaos struct {
	oracle       observer
	controllers  []*controllerprocess.Process // the ones running, or the last ones
	pause        *sync.RWMutex
	rng          *rand.Rand
	ops          int
	apiRestarted bool
}

// observer is what chaos tells a run's oracle, and asks it.
type observer interface {
	outageStarted(what string)
	outageEnded(what string)
	// opsDone is how many operations the generator has performed.
	opsDone() int
	// watchingAfter tells whether the oracle's watch (re)connected after t.
	watchingAfter(t time.Time) bool
}

func (c *chaos) run(ctx context.Context) error {
	for {
		sleep(ctx, 3*time.Second+time.Duration(c.rng.Int64N(int64(7*time.Second))))
		if ctx.Err() != nil {
			return nil
		}
		if !c.apiRestarted && c.oracle.opsDone() >= c.ops/3 {
			if err := c.restartAPIServer(ctx); err != nil {
				return err
			}
			continue
		}
		if err := c.restartController(ctx, c.rng.IntN(len(c.controllers)), time.Duration(c.rng.Int64N(int64(1500*time.Millisecond)))); err != nil {
			return err
		}
	}
}

func (o *oracle) opsDone() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, k := range o.stats.ops {
		n += k
	}
	return n
}

// restartController kills controller i with SIGKILL, waits down, and starts
// it again; the outage lasts until the new one is ready.
func (c *chaos) restartController(ctx context.Context, i int, down time.Duration) error {
	c.oracle.outageStarted(outageController)
	if err := c.controllers[i].Kill(); err != nil {
		return fmt.Errorf("kill the controller: %w", err)
	}
	sleep(ctx, down)
	// The restart is not bound to ctx: the run needs its controllers to finish.
	next, err := c.controllers[i].StartAgain(context.Background())
	if err != nil {
		return fmt.Errorf("restart the controller: %w", err)
	}
	c.controllers[i] = next
	c.oracle.outageEnded(outageController)
	return nil
}

// ensureRunning starts again every controller that is not running (the
// chaos's last kill, cut short by the end of the run).
func (c *chaos) ensureRunning(ctx context.Context) error {
	for i, p := range c.controllers {
		if p.Alive() != nil {
			if err := c.restartController(ctx, i, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// logPaths are the controllers' logs.
func (c *chaos) logPaths() string { return logPathsOf(c.controllers) }

// killAll kills the controllers at the end of the run.
func (c *chaos) killAll() { killProcesses(c.controllers) }

// logPathsOf names the logs of processes, for a run's report.
func logPathsOf(processes []*controllerprocess.Process) string {
	var paths []string
	for _, p := range processes {
		paths = append(paths, p.LogPath)
	}
	return strings.Join(paths, " and ")
}

// killProcesses kills processes, as the end of a run does.
func killProcesses(processes []*controllerprocess.Process) {
	for _, p := range processes {
		_ = p.Kill()
	}
}

// restartAPIServer restarts kube-apiserver while the controller runs.
func (c *chaos) restartAPIServer(ctx context.Context) error {
	if err := restartAPIServer(ctx, c.pause, c.oracle); err != nil {
		return err
	}
	c.apiRestarted = true
	return nil
}

// restartAPIServer restarts kube-apiserver, the oracle counting the outage,
// and returns once the oracle watches the new one. The generator's writes
// pause meanwhile (pause), so that none is in doubt.
func restartAPIServer(ctx context.Context, pause *sync.RWMutex, o observer) error {
	pause.Lock()
	defer pause.Unlock()
	began := time.Now()
	o.outageStarted(outageAPIServer)
	if err := env.Cluster.RestartAPIServer(ctx); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	o.outageEnded(outageAPIServer)
	// The generator writes again once the oracle sees again. The old
	// kube-apiserver serves its watches until it exits, so a watch that
	// connected after the restart began is on the new one.
	return pollErr(ctx, time.Minute, func() error {
		if !o.watchingAfter(began) {
			return fmt.Errorf("the oracle's watch did not reconnect")
		}
		return nil
	})
}
