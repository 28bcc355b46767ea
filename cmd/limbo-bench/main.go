// Command limbo-bench is limbo's benchmark (`make bench`): on a local control
// plane of its own, with the controller as a child process, it measures
// convergence against the raw-apply floor, the API server's cost of a no-op
// reconcile, deletion lateness and the controller's memory, prints a table and
// writes the same figures as JSON. See docs/performance.md.
//
//	limbo-bench [-bundles 200] [-objects 10] [-deletions 200] [-memory=true] [-out bench-results.json] ...
//	limbo-bench -shards 2 [-memory-bundles 1000] [-objects 10]   one controller against two shards
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/limbo-dev/limbo/pkg/bench"
)

func main() {
	cfg := bench.DefaultConfig()
	var out, controllerArgs, controllerEnv string
	var qps float64 = float64(cfg.QPS)
	flag.IntVar(&cfg.Bundles, "bundles", cfg.Bundles, "N: Bundles of the converge, no-op and deletion phases (1..1000)")
	flag.IntVar(&cfg.Objects, "objects", cfg.Objects, "M: ConfigMaps per Bundle (1..10)")
	flag.Float64Var(&qps, "qps", qps, "client QPS of the controller (--kube-api-qps) and of the floor client")
	flag.IntVar(&cfg.Burst, "burst", cfg.Burst, "client burst of the controller (--kube-api-burst) and of the floor client")
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "reconcile workers of the controller (--workers) and concurrency of the floor client")
	flag.IntVar(&cfg.Deletions, "deletions", cfg.Deletions, "K: objects removed from their Bundles for the deletion-lateness phase (0 skips it)")
	flag.DurationVar(&cfg.MinDelay, "min-delay", cfg.MinDelay, "shortest limbo.dev/deletionDelay of the deletion phase")
	flag.DurationVar(&cfg.MaxDelay, "max-delay", cfg.MaxDelay, "longest limbo.dev/deletionDelay of the deletion phase")
	flag.BoolVar(&cfg.Memory, "memory", cfg.Memory, "run the memory phase: top the Bundles up to -memory-bundles and read the controller's heap and RSS")
	flag.IntVar(&cfg.MemoryBundles, "memory-bundles", cfg.MemoryBundles, "Bundles (of -objects ConfigMaps each) of the memory phase")
	flag.IntVar(&cfg.Shards, "shards", cfg.Shards, "N > 1: instead of the other phases, converge -memory-bundles × -objects with one controller, then with N controllers sharded by --watch-label-selector, and report each controller's CPU and memory")
	flag.StringVar(&out, "out", "bench-results.json", "write the figures as JSON to this file; empty: do not")
	flag.StringVar(&cfg.ProfileDir, "profile-dir", "", "save the controller's CPU profiles (converge and memory phases) and heap profiles here")
	flag.StringVar(&cfg.WorkDir, "work-dir", "", "keep the controller's log here; empty: a temporary directory, kept only if the run fails")
	flag.StringVar(&cfg.RepoRoot, "repo", "", "the limbo repository (crds/, cmd/limbo); empty: found above the working directory")
	flag.StringVar(&cfg.BinDir, "bin-dir", "", "directory of etcd, kube-apiserver and kube-controller-manager; empty: bin/ (or $LIMBO_BIN_DIR)")
	flag.StringVar(&cfg.LimboBin, "limbo-bin", "", "limbo binary to run as the controller; empty: go build ./cmd/limbo")
	flag.StringVar(&cfg.ControllerLogLevel, "controller-log-level", cfg.ControllerLogLevel, "the controller's --zap-log-level")
	flag.StringVar(&controllerArgs, "controller-args", "", "extra arguments of `limbo controller`, space-separated")
	flag.StringVar(&controllerEnv, "controller-env", "", "extra environment of the controller, space-separated KEY=VALUE (for example GOMEMLIMIT=120MiB)")
	flag.Parse()
	cfg.QPS = float32(qps)
	cfg.ControllerArgs = strings.Fields(controllerArgs)
	cfg.ControllerEnv = strings.Fields(controllerEnv)

	// The benchmark's own informers log through controller-runtime: errors only.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg, os.Stderr)
	if res != nil && (err == nil || res.Converge.ControllerSeconds > 0) {
		res.Print(os.Stdout)
		if out != "" {
			if werr := res.WriteJSON(out); werr != nil {
				fmt.Fprintln(os.Stderr, "limbo-bench:", werr)
			} else {
				fmt.Printf("\nfigures written to %s\n", out)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "limbo-bench:", err)
		os.Exit(1)
	}
}
