package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// TestSoak runs two replicas of `limbo controller` with leader election, as a
// Deployment of two would: only the leader acts (DESIGN §6). The Lease's timings
// are short, so that a failover (a deadline that falls in it is late by at most
// about the lease's duration) fits the run.
const (
	soakLease         = "limbo-soak"
	soakLeaseDuration = 4 * time.Second
	soakRenewDeadline = 3 * time.Second
	soakRetryPeriod   = 500 * time.Millisecond
	// leaderTimeout bounds the wait for a leader after a kill.
	leaderTimeout = time.Minute
)

// startReplicas starts two replicas of limboBin with leader election (a
// Lease in the run's namespace), the shard of every Bundle without the shard
// label (shardRest), each logging among the artifacts.
func (r *soakRun) startReplicas(t *testing.T, limboBin string) []*controllerprocess.Process {
	t.Helper()
	args := []string{"--zap-log-level", "info", "--watch-label-selector", shardSelectors[shardRest],
		"--leader-elect", "--leader-election-namespace", r.namespace, "--leader-election-id", soakLease,
		"--leader-election-lease-duration", soakLeaseDuration.String(),
		"--leader-election-renew-deadline", soakRenewDeadline.String(),
		"--leader-election-retry-period", soakRetryPeriod.String()}
	var replicas []*controllerprocess.Process
	for _, name := range []string{"a", "b"} {
		p, err := controllerprocess.Start(r.ctx, controllerprocess.Config{Bin: limboBin, Kubeconfig: env.Cluster.KubeconfigPath,
			Name: "limbo controller " + name, LogPath: filepath.Join(r.artifacts, "controller-"+name+".log"), Args: args})
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, p)
	}
	return replicas
}

// replicaChaos kills a controller process every 2 to 7 s (1 to 3 s until
// every kind happened) at random — one of the rest's two replicas (the
// leader or the standby), or, one time in four, shard a's single process —
// and starts it again, and restarts kube-apiserver once, a third of the way
// into the run. A replica that exits on its own (a leader that could not
// renew its Lease exits) is started again too.
//
// The oracle's controller outage of the rest is the span without a leader
// known to act: it starts with each kill and ends once a live replica reports
// that it leads (leader_election_master_status): a standby's kill ends it at
// once, a leader's once the standby took over (after up to the lease's
// duration) or the restarted replica won the Lease. Shard a's lasts from its
// kill until its process started again is ready (its caches synced). Each is
// an outage of its shard's objects only (outage.shard).
type replicaChaos struct {
	oracle       *oracle
	replicas     []*controllerprocess.Process // the ones running, or the last ones
	shardA       *controllerprocess.Process   // the one running, or the last one
	pause        *sync.RWMutex
	rng          *rand.Rand
	ops          int
	apiRestarted bool
	// leaderKills, standbyKills and shardAKills count the kills of each
	// kind: until all happened, the next kill is of a kind missing, and comes
	// early, so that even a short run has them all.
	leaderKills, standbyKills, shardAKills int
	// started are when the replicas were started; apiBack is when
	// kube-apiserver was back from its restart.
	started []time.Time
	apiBack time.Time
	// drift, when set, drifts objects of a shard none of whose controllers
	// runs (generator.driftWhileDown).
	drift func(ctx context.Context, shard string, rng *rand.Rand)
}

// driftWhileDown drifts objects of shard, which none of its controllers
// serves now.
func (c *replicaChaos) driftWhileDown(ctx context.Context, shard string) {
	if c.drift != nil {
		c.drift(ctx, shard, c.rng)
	}
}

func (c *replicaChaos) run(ctx context.Context) error {
	for {
		wait := 2*time.Second + time.Duration(c.rng.Int64N(int64(5*time.Second)))
		if c.leaderKills == 0 || c.standbyKills == 0 || c.shardAKills == 0 {
			wait = time.Second + time.Duration(c.rng.Int64N(int64(2*time.Second)))
		}
		next := time.Now().Add(wait)
		// Until the next kill, look after the replicas: one that exited on its
		// own is started again at once.
		for ctx.Err() == nil && time.Now().Before(next) {
			if err := c.supervise(ctx); err != nil {
				return err
			}
			sleep(ctx, 250*time.Millisecond)
		}
		if ctx.Err() != nil {
			return nil
		}
		if !c.apiRestarted && c.oracle.opsDone() >= c.ops/3 {
			if err := c.restartAPIServer(ctx); err != nil {
				return err
			}
			continue
		}
		down := time.Duration(c.rng.Int64N(int64(1500 * time.Millisecond)))
		if c.rng.IntN(4) == 0 || (c.shardAKills == 0 && c.leaderKills > 0 && c.standbyKills > 0) {
			if err := c.killShardA(ctx, down); err != nil {
				return err
			}
			continue
		}
		leaderWanted := c.rng.IntN(2) == 0
		switch {
		case c.leaderKills == 0 && c.standbyKills > 0:
			leaderWanted = true
		case c.standbyKills == 0 && c.leaderKills > 0:
			leaderWanted = false
		}
		if err := c.kill(ctx, leaderWanted, down); err != nil {
			return err
		}
	}
}

// killShardA kills shard a's process with SIGKILL, waits down and starts it
// again. Its outage ends once the new process is ready: without leader
// election it acts as soon as its caches synced, and, started afresh, without
// the backoff of a process that ran through a kube-apiserver outage.
func (c *replicaChaos) killShardA(ctx context.Context, down time.Duration) error {
	c.shardAKills++
	c.oracle.outageStartedAt(outageController, shardA, time.Now())
	c.oracle.countChaos("kill-shard-a")
	c.oracle.Log("chaos: kill shard a's controller (pid %d), down %v", c.shardA.Pid(), down.Round(time.Millisecond))
	if err := c.shardA.Kill(); err != nil {
		return fmt.Errorf("kill shard a's controller: %w", err)
	}
	c.driftWhileDown(ctx, shardA)
	sleep(ctx, down)
	return c.startShardAAgain()
}

// startShardAAgain starts shard a's process again and ends its outage once the
// new process is ready. It is not bound to the run's context: the run needs
// its controllers to finish.
func (c *replicaChaos) startShardAAgain() error {
	next, err := c.shardA.StartAgain(context.Background())
	if err != nil {
		return fmt.Errorf("restart shard a's controller: %w", err)
	}
	c.shardA = next
	c.oracle.outageEndedAs(outageController, shardA, false)
	return nil
}

// leader is the index of the replica that reports that it leads, or -1.
func (c *replicaChaos) leader(ctx context.Context) int {
	for i, p := range c.replicas {
		if p.Alive() != nil {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := p.Metrics(mctx)
		cancel()
		if err == nil && m.Sum("leader_election_master_status", map[string]string{"name": soakLease}) == 1 {
			return i
		}
	}
	return -1
}

// waitLeader waits until a live replica leads.
func (c *replicaChaos) waitLeader(ctx context.Context, timeout time.Duration) error {
	return pollErr(ctx, timeout, func() error {
		if c.leader(ctx) < 0 {
			return fmt.Errorf("no replica leads")
		}
		return nil
	})
}

// kill kills the leader (leaderWanted) or the standby with SIGKILL, waits down
// and starts it again. The outage ends once a replica leads: for a standby,
// right after the kill.
func (c *replicaChaos) kill(ctx context.Context, leaderWanted bool, down time.Duration) error {
	lead := c.leader(ctx)
	victim, role := 0, "leader"
	switch {
	case lead < 0:
		role = "replica (no leader known)"
	case leaderWanted:
		victim = lead
		c.leaderKills++
	default:
		victim, role = 1-lead, "standby"
		c.standbyKills++
	}
	c.oracle.outageStartedAt(outageController, shardRest, time.Now())
	c.oracle.countChaos("kill-" + strings.Fields(role)[0])
	c.oracle.Log("chaos: kill the %s, replica %d (pid %d), down %v", role, victim, c.replicas[victim].Pid(), down.Round(time.Millisecond))
	if err := c.replicas[victim].Kill(); err != nil {
		return fmt.Errorf("kill the controller: %w", err)
	}
	ended := false
	if role == "standby" && c.leader(ctx) == lead {
		c.oracle.outageEndedAs(outageController, shardRest, true) // the leader goes on
		ended = true
	} else if role == "leader" {
		c.driftWhileDown(ctx, shardRest) // until the standby takes over
	}
	sleep(ctx, down)
	if err := c.startAgain(victim); err != nil {
		return err
	}
	if !ended {
		return c.endOutage(fmt.Sprintf("the kill of the %s", role))
	}
	return nil
}

// endOutage waits until a replica leads and ends the controller outage: stale
// unless the leader was started after kube-apiserver was back (see
// outage.stale).
func (c *replicaChaos) endOutage(after string) error {
	if err := c.waitLeader(context.Background(), leaderTimeout); err != nil {
		return fmt.Errorf("after %s: %w", after, err)
	}
	lead := c.leader(context.Background())
	stale := lead < 0 || !c.started[lead].After(c.apiBack)
	c.oracle.outageEndedAs(outageController, shardRest, stale)
	return nil
}

// startAgain starts replica i again. It is not bound to the run's context: the
// run needs its controllers to finish.
func (c *replicaChaos) startAgain(i int) error {
	next, err := c.replicas[i].StartAgain(context.Background())
	if err != nil {
		return fmt.Errorf("restart the controller: %w", err)
	}
	c.replicas[i], c.started[i] = next, time.Now()
	return nil
}

// supervise starts again every replica that exited on its own, as the
// kubelet restarts a Pod's container. That is a failover the chaos did not
// make: its outage starts a renew deadline before the exit was seen (a leader
// gives up, and exits, after failing to renew for that long), and ends once a
// replica leads. Shard a's process, without leader election, has no reason
// to exit: that it did is a violation (shardAAlive).
func (c *replicaChaos) supervise(ctx context.Context) error {
	if err := c.shardAAlive(); err != nil {
		return err
	}
	for i, p := range c.replicas {
		if p.Alive() == nil {
			continue
		}
		c.oracle.outageStartedAt(outageController, shardRest, time.Now().Add(-soakRenewDeadline))
		c.oracle.countChaos("exited-on-its-own")
		c.oracle.Log("chaos: replica %d (pid %d) exited on its own: %v", i, p.Pid(), controllerprocess.Tail(p.LogPath, 5))
		if err := c.startAgain(i); err != nil {
			return err
		}
		if err := c.endOutage(fmt.Sprintf("replica %d exited", i)); err != nil {
			return err
		}
	}
	return nil
}

// shardAAlive reports a violation if shard a's process exited on its own (the
// chaos starts it again at once after a kill), and starts it again, its
// outage from the time the exit was seen until it is ready.
func (c *replicaChaos) shardAAlive() error {
	err := c.shardA.Alive()
	if err == nil {
		return nil
	}
	c.oracle.mu.Lock()
	c.oracle.violatef("shard a's controller exited: %v: %v", err, controllerprocess.Tail(c.shardA.LogPath, 10))
	c.oracle.mu.Unlock()
	c.oracle.outageStartedAt(outageController, shardA, time.Now())
	return c.startShardAAgain()
}

// restartAPIServer restarts kube-apiserver while the controllers run. The
// leader cannot renew its Lease meanwhile and may exit: supervise starts it
// again.
func (c *replicaChaos) restartAPIServer(ctx context.Context) error {
	c.oracle.countChaos("restart-kube-apiserver")
	if err := restartAPIServer(ctx, c.pause, c.oracle); err != nil {
		return err
	}
	c.apiBack = time.Now()
	c.apiRestarted = true
	return c.supervise(ctx)
}

// logPaths are the controllers' logs.
func (c *replicaChaos) logPaths() string { return logPathsOf(c.processes()) }

// processes are the controller processes running, or the last ones: the
// rest's replicas, then shard a's.
func (c *replicaChaos) processes() []*controllerprocess.Process {
	return append(slices.Clone(c.replicas), c.shardA)
}

// finish makes sure both replicas run and one leads, and shard a's process
// runs, for the end of the run. A run too short to reach them still kills the
// leader, the standby and shard a's process once each, as it restarts
// kube-apiserver; and every run ends with a kill of the leader and of shard
// a's process, each drifting objects while down.
func (c *replicaChaos) finish(ctx context.Context) error {
	if err := c.supervise(ctx); err != nil {
		return err
	}
	for range 3 {
		if (c.leaderKills > 0 && c.standbyKills > 0) || ctx.Err() != nil {
			break
		}
		if err := c.kill(ctx, c.leaderKills == 0, 0); err != nil {
			return err
		}
	}
	if c.shardAKills == 0 && ctx.Err() == nil {
		if err := c.killShardA(ctx, 0); err != nil {
			return err
		}
	}
	// One failover more of each shard, with its drifts made while down, after
	// the generator's last operation: a later change of a Bundle (a template
	// edited, a move) would re-apply a drifted object that a restarted
	// controller skipped, and hide it from keptAsDeclared.
	if c.drift != nil && ctx.Err() == nil {
		if err := c.waitLeader(ctx, leaderTimeout); err != nil {
			return err
		}
		if err := c.kill(ctx, true, 0); err != nil {
			return err
		}
		if err := c.killShardA(ctx, 0); err != nil {
			return err
		}
	}
	return c.waitLeader(context.Background(), leaderTimeout)
}

func (c *replicaChaos) killAll() { killProcesses(c.processes()) }
