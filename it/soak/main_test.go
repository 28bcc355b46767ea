// Package soak is limbo's randomized, model-based soak test. A seeded
// generator performs operations on several Bundles at once — resources added,
// removed and declared again with deletion delays of 0 to 6 s and dependencies
// among them, delays edited, objects deleted by hand, expedited and cancelled
// with kubectl limbo, spec errors written and fixed, a custom resource made
// not Ready and Ready again, Bundles emptied, deleted with each cascade and
// moved between two shards — while one of the two `limbo controller` processes
// with leader election of one shard, the leader or the standby, is killed with
// SIGKILL and restarted at random, and kube-apiserver is restarted. An oracle, kept from the operations and a watch
// of every object, checks each deletion against DESIGN.md §2–§4.
//
// The short form (LIMBO_SOAK_OPS, default 300 operations) runs with
// `go test ./it/...`; `make soak` runs the long form. A failure prints the seed:
// LIMBO_SOAK_SEED=<seed> replays the same operations. See docs/reliability.md.
package soak

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
)

var (
	env *testenv.Env

	seedFlag = flag.Int64("soak.seed", envInt("LIMBO_SOAK_SEED", 0), "seed of the generator; 0 picks one (env LIMBO_SOAK_SEED)")
	opsFlag  = flag.Int("soak.ops", int(envInt("LIMBO_SOAK_OPS", 300)), "operations to perform (env LIMBO_SOAK_OPS)")
	skipFlag = flag.String("soak.skip", os.Getenv("LIMBO_SOAK_SKIP"), "comma-separated operations not to perform, to tell one failure from another (env LIMBO_SOAK_SKIP)")
)

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// TestMain starts the control plane only: the controller under test runs as a
// process of its own (pkg/controllerprocess), started by TestSoak. The
// controller manager logs at --v=2, so that a Bundle its garbage collector holds
// comes with the collector's resyncs (collectorEvidence).
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{NoController: true, ControllerManagerVerbosity: 2}, &env))
}
