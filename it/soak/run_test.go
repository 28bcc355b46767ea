package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// soakRun is what every soak starts with: the seed and the number of operations
// (the flags), a context that ends a minute before the test's deadline, the
// test's namespace, and a directory for the operation log and the controller's
// log, kept when the test fails.
type soakRun struct {
	name      string
	seed      int64
	ops       int
	ctx       context.Context
	namespace string
	artifacts string
}

// startSoak starts the soak name on what (for the log line that tells how to
// replay it).
func startSoak(t *testing.T, name, what string) *soakRun {
	t.Helper()
	r := &soakRun{name: name, seed: *seedFlag, ops: *opsFlag}
	if r.seed == 0 {
		r.seed = time.Now().UnixNano() % 1_000_000_000
	}
	t.Logf("%s: seed %d, %d operations on %s (replay: LIMBO_SOAK_SEED=%d LIMBO_SOAK_OPS=%d)", name, r.seed, r.ops, what, r.seed, r.ops)
	fmt.Printf("%s: seed %d, %d operations\n", name, r.seed, r.ops)
	ctx, cancel := context.WithCancel(context.Background())
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-time.Minute))
	}
	t.Cleanup(cancel)
	r.ctx = ctx
	r.namespace = env.Namespace(t)
	var err error
	if r.artifacts, err = os.MkdirTemp("", fmt.Sprintf("limbo-%s-%d-", strings.ReplaceAll(name, " ", "-"), r.seed)); err != nil {
		t.Fatal(err)
	}
	return r
}

// journal is an oracle's record: the violations it found, and the log of the
// operations and observations for the failure report. mu is the oracle's lock:
// violatef and logf are called with it held.
type journal struct {
	mu         sync.Mutex
	violations []string
	log        []string
}

func (j *journal) violatef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	j.violations = append(j.violations, msg)
	j.logf("VIOLATION %s", msg)
}

func (j *journal) logf(format string, args ...any) {
	j.log = append(j.log, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// Log records an operation for the failure report.
func (j *journal) Log(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.logf(format, args...)
}

// keepLog writes the oracle's log (j) to operations.log among the artifacts when
// t failed, and removes the artifacts when it passed — unless LIMBO_SOAK_KEEP
// is set, which keeps a passing run's too (to study what a rule, or a mutant
// of limbo, let through).
func (r *soakRun) keepLog(t *testing.T, j *journal) {
	t.Cleanup(func() {
		keep := os.Getenv("LIMBO_SOAK_KEEP") != ""
		if !t.Failed() && !keep {
			_ = os.RemoveAll(r.artifacts)
			return
		}
		j.mu.Lock()
		text := strings.Join(j.log, "\n") + "\n"
		j.mu.Unlock()
		if err := os.WriteFile(filepath.Join(r.artifacts, "operations.log"), []byte(text), 0o644); err != nil {
			t.Log(err)
		}
	})
}

// startShards builds limbo into bin and starts one process of each shard
// (shardSelectors), without leader election, logging among the artifacts.
// They are killed with SIGKILL: they do not release a Lease, and need none.
func (r *soakRun) startShards(t *testing.T, bin string) []*controllerprocess.Process {
	t.Helper()
	limboBin, err := controllerprocess.Build(r.ctx, env.RepoRoot, bin)
	if err != nil {
		t.Fatal(err)
	}
	var controllers []*controllerprocess.Process
	for _, shard := range []string{shardA, shardRest} {
		p, err := controllerprocess.Start(r.ctx, shardConfig(r, limboBin, shard))
		if err != nil {
			t.Fatal(err)
		}
		controllers = append(controllers, p)
	}
	return controllers
}

// report logs the run's report lines, and fails t with the violations, saying
// how to replay the run and where its logs are.
func (r *soakRun) report(t *testing.T, lines, violations []string, controllerLog string) {
	t.Helper()
	for _, line := range lines {
		t.Logf("%s: %s", r.name, line)
		fmt.Printf("%s: %s\n", r.name, line)
	}
	if len(violations) == 0 {
		return
	}
	shown := violations
	if len(shown) > 30 {
		shown = shown[:30]
	}
	t.Errorf("%s: %d violations with seed %d (replay: LIMBO_SOAK_SEED=%d LIMBO_SOAK_OPS=%d go test ./it/soak -run '%s$' -v); operations and observations in %s, controller log in %s:\n  %s",
		r.name, len(violations), r.seed, r.seed, r.ops, t.Name(), filepath.Join(r.artifacts, "operations.log"), controllerLog, strings.Join(shown, "\n  "))
}
