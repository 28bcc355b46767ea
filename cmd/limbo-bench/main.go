// Command limbo-bench is limbo's benchmark (`make bench`): on a local control
// plane of its own, with the controller as a child process, it measures
// convergence against the raw-apply floor, the API server's cost of a no-op
// reconcile, deletion lateness and the controller's memory, prints a table and
// writes the same figures as JSON. See docs/performance.md.
//
//	limbo-bench [-preset default|large] [-bundles 200] [-objects 10] [-deletions 200] [-memory=true] [-out bench-results.json] ...
//	limbo-bench -kro-bin bin/kro -kro-crds DIR ...   also converge the unthrottled workload with kro (make bench-peers)
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
	var out, controllerArgs, controllerEnv, preset string
	qps, unthrottledQPS := float64(cfg.QPS), float64(cfg.UnthrottledQPS)
	flag.StringVar(&preset, "preset", cfg.Preset, "workload preset, whose sizes the other flags override: "+presetHelp())
	flag.IntVar(&cfg.Bundles, "bundles", cfg.Bundles, "N: Bundles of the converge, no-op and deletion phases (1..1000)")
	flag.IntVar(&cfg.Objects, "objects", cfg.Objects, "M: ConfigMaps per Bundle (1..10)")
	flag.Float64Var(&qps, "qps", qps, "client QPS of the controller (--kube-api-qps) and of the floor client")
	flag.IntVar(&cfg.Burst, "burst", cfg.Burst, "client burst of the controller (--kube-api-burst) and of the floor client")
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "reconcile workers of the controller (--workers, kro's --dynamic-controller-concurrent-reconciles) and concurrency of the floor client")
	flag.Float64Var(&unthrottledQPS, "unthrottled-qps", unthrottledQPS, "client QPS of the second, unthrottled converge (its own controller, floor and kro); 0 skips it")
	flag.IntVar(&cfg.UnthrottledBurst, "unthrottled-burst", cfg.UnthrottledBurst, "client burst of the unthrottled converge")
	flag.StringVar(&cfg.KroBin, "kro-bin", "", "kro controller binary: also converge the unthrottled workload as a kro ResourceGraphDefinition (make bench-peers)")
	flag.StringVar(&cfg.KroCRDs, "kro-crds", "", "directory of kro's CRDs (the kro module's helm/crds)")
	flag.StringVar(&cfg.KroVersion, "kro-version", "", "the kro version -kro-bin was built from, for the report")
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
	// The preset sets the sizes; parsing again lets the flags given override them.
	presetCfg, err := bench.PresetConfig(preset)
	if err != nil {
		fmt.Fprintln(os.Stderr, "limbo-bench:", err)
		os.Exit(2)
	}
	cfg.Preset, cfg.Bundles, cfg.Objects, cfg.MemoryBundles = presetCfg.Preset, presetCfg.Bundles, presetCfg.Objects, presetCfg.MemoryBundles
	_ = flag.CommandLine.Parse(os.Args[1:])
	cfg.QPS, cfg.UnthrottledQPS = float32(qps), float32(unthrottledQPS)
	cfg.ControllerArgs = strings.Fields(controllerArgs)
	cfg.ControllerEnv = strings.Fields(controllerEnv)

	// The benchmark's own informers log through controller-runtime: errors only.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	if err := run(cfg, out); err != nil {
		fmt.Fprintln(os.Stderr, "limbo-bench:", err)
		os.Exit(1)
	}
}

// run runs the benchmark and prints (and writes to out) its figures.
func run(cfg bench.Config, out string) error {
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
	return err
}

// presetHelp lists the presets for -preset's help.
func presetHelp() string {
	parts := make([]string, len(bench.Presets))
	for i, p := range bench.Presets {
		parts[i] = p.Name + " (" + p.Description + ")"
	}
	return strings.Join(parts, "; ")
}
