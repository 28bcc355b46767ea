// Package bench is limbo's benchmark (`make bench`, cmd/limbo-bench): on a local
// control plane of its own it measures how fast the controller converges compared
// with applying the same objects directly (the floor), what a reconcile with
// nothing to do costs the API server, how late deletions in limbo happen, and how
// much memory the controller takes. docs/performance.md explains the figures.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
	"github.com/limbo-dev/limbo/pkg/localcluster"
)

// Config is the benchmark's parameters; cmd/limbo-bench has a flag for each.
type Config struct {
	// RepoRoot is the repository (crds/, cmd/limbo); empty finds it above the
	// working directory.
	RepoRoot string
	// BinDir holds the control plane's binaries; empty: localcluster's default.
	BinDir string
	// LimboBin is the limbo binary to run as the controller; empty builds
	// cmd/limbo with `go build`.
	LimboBin string

	// Preset is the name of the preset the workload came from (Presets).
	Preset  string
	Bundles int // N
	Objects int // M, ConfigMaps per Bundle

	// QPS and Burst are the client of the controller and of the floor in the
	// main converge and in the phases after it: the controller's defaults,
	// which throttle both sides.
	QPS     float32
	Burst   int
	Workers int
	// UnthrottledQPS and UnthrottledBurst are the client of the second
	// converge (a controller of its own, in namespaces of its own), set high
	// enough that the client's rate limiter is not what is measured; QPS 0
	// skips it. The peer (kro) runs with them too.
	UnthrottledQPS   float32
	UnthrottledBurst int

	// KroBin is a kro controller binary (make bench-peers builds one): when
	// set, the unthrottled workload also runs as a kro ResourceGraphDefinition
	// with one instance per Bundle. KroCRDs is the directory of kro's CRDs (the
	// module's helm/crds) and KroVersion the version it was built from.
	KroBin, KroCRDs, KroVersion string

	Deletions int // K
	MinDelay  time.Duration
	MaxDelay  time.Duration

	// Memory runs the memory phase: the Bundles are topped up to MemoryBundles
	// (of Objects each) and the controller's memory is read once they converged.
	Memory        bool
	MemoryBundles int

	// ProfileDir, when set, receives CPU profiles of the controller during the
	// converge and memory phases and heap profiles after them.
	ProfileDir string
	// WorkDir keeps the controller's log; empty uses a temporary directory,
	// removed at the end unless the run fails.
	WorkDir string
	// ControllerLogLevel is the controller's --zap-log-level.
	ControllerLogLevel string
	// ControllerArgs are extra arguments of `limbo controller`.
	ControllerArgs []string
	// ControllerEnv are extra environment variables (KEY=VALUE) of the
	// controller, for example GOMEMLIMIT=120MiB.
	ControllerEnv []string
	// Shards > 1 runs the shard comparison instead of the other phases:
	// MemoryBundles × Objects converged by one controller, then by Shards
	// controllers, each with --watch-label-selector for its share.
	Shards int
}

// DefaultConfig is `make bench`'s configuration.
func DefaultConfig() Config {
	opts := controller.DefaultOptions()
	return Config{
		Preset:  Presets[0].Name,
		Bundles: Presets[0].Bundles, Objects: Presets[0].Objects,
		QPS: opts.QPS, Burst: opts.Burst, Workers: opts.Workers,
		UnthrottledQPS: 1000, UnthrottledBurst: 2000,
		Deletions: 200, MinDelay: 5 * time.Second, MaxDelay: 20 * time.Second,
		Memory: true, MemoryBundles: Presets[0].MemoryBundles,
		ControllerLogLevel: "info",
		Shards:             1,
	}
}

// Validate checks the parameters.
func (c Config) Validate() error {
	switch {
	case c.Bundles < 1 || c.Bundles > 1000:
		return fmt.Errorf("-bundles must be within 1..1000, not %d", c.Bundles)
	case c.Objects < 1 || c.Objects > 10:
		return fmt.Errorf("-objects must be within 1..10, not %d", c.Objects)
	case c.QPS <= 0 || c.Burst < 1 || c.Workers < 1:
		return fmt.Errorf("-qps, -burst and -workers must be positive")
	case c.UnthrottledQPS < 0 || (c.UnthrottledQPS > 0 && c.UnthrottledBurst < 1):
		return fmt.Errorf("-unthrottled-qps must be 0 (skip) or positive, with a positive -unthrottled-burst")
	case c.KroBin != "" && (c.KroCRDs == "" || c.UnthrottledQPS == 0):
		return fmt.Errorf("-kro-bin needs -kro-crds and the unthrottled converge (-unthrottled-qps > 0)")
	case c.KroBin != "" && c.Shards > 1:
		return fmt.Errorf("-kro-bin and -shards do not combine")
	case c.Deletions < 0 || c.Deletions > c.Bundles*c.Objects:
		return fmt.Errorf("-deletions must be within 0..%d (bundles × objects), not %d", c.Bundles*c.Objects, c.Deletions)
	case c.MinDelay < time.Second || c.MaxDelay < c.MinDelay:
		return fmt.Errorf("need 1s ≤ -min-delay ≤ -max-delay")
	case c.Memory && (c.MemoryBundles < 1 || c.MemoryBundles > 1000):
		return fmt.Errorf("-memory-bundles must be within 1..1000, not %d", c.MemoryBundles)
	case c.Shards < 1 || c.Shards > 8:
		return fmt.Errorf("-shards must be within 1..8, not %d", c.Shards)
	case c.Shards > 1 && (c.MemoryBundles < 1 || c.MemoryBundles > 1000):
		return fmt.Errorf("-memory-bundles (the shard comparison's Bundles) must be within 1..1000, not %d", c.MemoryBundles)
	}
	return nil
}

const (
	// nsBundles holds the main lane's Bundles, which the phases after the
	// converges (no-op, deletion, memory) work on.
	nsBundles = "bench-bundles"
	// userConcurrency and userQPS are the benchmark's own client (creating and
	// updating Bundles, the no-op trigger): fast, so that it is never the
	// bottleneck.
	userConcurrency = 8
	userQPS         = 500
	// quiet is how long the controller must send nothing to be called idle.
	quiet = 3 * time.Second
)

// runner holds what the phases share.
type runner struct {
	cfg     Config
	log     io.Writer
	res     *Results
	work    *workload
	cluster *localcluster.Cluster
	user    client.Client // the benchmark's own client
	kube    kubernetes.Interface
	// main is the converge at the controller's defaults; its controller, ctrl,
	// serves the phases after it too. unthrottled is the converge without the
	// client's rate limiter in the way (nil: skipped).
	main, unthrottled *lane
	ctrl              *controllerprocess.Process
	tracker           *tracker
	// bin is the limbo binary the controllers run.
	bin string
	// startHeapMiB and startRSSMiB are the controller's memory right after it
	// started.
	startHeapMiB, startRSSMiB float64
	workDir                   string
	profiles                  sync.WaitGroup
}

// Run runs the benchmark; progress goes to log.
func Run(ctx context.Context, cfg Config, log io.Writer) (res *Results, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	res = &Results{
		Started:      started.UTC().Truncate(time.Second),
		Host:         Host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAtStart: loadAverage()},
		PhaseSeconds: map[string]float64{},
		Settings: Settings{Preset: cfg.Preset, Bundles: cfg.Bundles, ObjectsPerBundle: cfg.Objects, QPS: cfg.QPS, Burst: cfg.Burst, Workers: cfg.Workers,
			UnthrottledQPS: cfg.UnthrottledQPS, UnthrottledBurst: cfg.UnthrottledBurst,
			Deletions: cfg.Deletions, MinDelay: cfg.MinDelay.String(), MaxDelay: cfg.MaxDelay.String(),
			ControllerArgs: cfg.ControllerArgs, ControllerEnv: cfg.ControllerEnv},
	}
	if cfg.Memory || cfg.Shards > 1 {
		res.Settings.MemoryBundles = cfg.MemoryBundles
	}
	if cfg.Shards > 1 {
		res.Settings.Shards = cfg.Shards
	}
	r := &runner{cfg: cfg, log: log, res: res, work: newWorkload(cfg.Bundles, cfg.Objects, cfg.Deletions, cfg.MinDelay, cfg.MaxDelay)}
	defer func() {
		r.profiles.Wait()
		res.Host.LoadAtEnd = loadAverage()
		res.TotalSeconds = round1(time.Since(started).Seconds())
	}()
	phaseStart := time.Now()
	phase := func(name string) {
		res.PhaseSeconds[name] = round1(time.Since(phaseStart).Seconds())
		phaseStart = time.Now()
	}

	cleanup, err := r.setup(ctx)
	defer func() {
		if cerr := cleanup(err != nil); err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return res, err
	}
	phase("setup")
	if cfg.Shards > 1 {
		if err := r.runShards(ctx); err != nil {
			return res, fmt.Errorf("shards: %w", err)
		}
		phase("shards")
		return res, nil
	}
	if err := r.runLane(ctx, r.main, &res.Converge); err != nil {
		return res, fmt.Errorf("converge: %w", err)
	}
	phase("converge")
	if r.unthrottled != nil {
		res.Unthrottled = &Converge{}
		if err := r.runLaneWithOwnController(ctx, r.unthrottled, res.Unthrottled); err != nil {
			return res, fmt.Errorf("unthrottled converge: %w", err)
		}
		phase("converge-unthrottled")
	}
	if cfg.KroBin != "" {
		if err := r.runKro(ctx); err != nil {
			return res, fmt.Errorf("kro: %w", err)
		}
		phase("kro")
	}
	if err := r.runNoOp(ctx); err != nil {
		return res, fmt.Errorf("no-op: %w", err)
	}
	phase("noop")
	if cfg.Deletions > 0 {
		if err := r.runDeletion(ctx); err != nil {
			return res, fmt.Errorf("deletion lateness: %w", err)
		}
		phase("deletion")
	}
	if cfg.Memory {
		if err := r.runMemory(ctx); err != nil {
			return res, fmt.Errorf("memory: %w", err)
		}
		phase("memory")
	} else {
		res.Memory = &Memory{Skipped: "-memory=false"}
	}
	return res, nil
}

// setup starts the control plane and the controller; cleanup stops them and
// removes the work directory, which it keeps (with the controller's log) when the
// run failed.
func (r *runner) setup(ctx context.Context) (cleanup func(failed bool) error, err error) {
	var stops []func() error
	removeWorkDir := ""
	cleanup = func(failed bool) error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		switch {
		case failed && r.workDir != "":
			fmt.Fprintf(r.log, "limbo-bench: the controller's log is kept in %s\n", r.workDir)
		case removeWorkDir != "":
			errs = append(errs, os.RemoveAll(removeWorkDir))
		}
		return errors.Join(errs...)
	}
	root := r.cfg.RepoRoot
	if root == "" {
		if root, err = findRepoRoot(); err != nil {
			return cleanup, err
		}
	}
	r.workDir = r.cfg.WorkDir
	if r.workDir == "" {
		if r.workDir, err = os.MkdirTemp("", "limbo-bench-"); err != nil {
			return cleanup, err
		}
		removeWorkDir = r.workDir
	} else if err := os.MkdirAll(r.workDir, 0o755); err != nil {
		return cleanup, err
	}
	if r.cfg.ProfileDir != "" {
		if err := os.MkdirAll(r.cfg.ProfileDir, 0o755); err != nil {
			return cleanup, err
		}
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--always", "--dirty").Output(); err == nil {
		r.res.Host.Revision = strings.TrimSpace(string(out))
	}
	bin := r.cfg.LimboBin
	r.res.Host.Controller = bin
	if bin == "" {
		fmt.Fprintln(r.log, "limbo-bench: go build ./cmd/limbo ...")
		if bin, err = controllerprocess.Build(ctx, root, r.workDir); err != nil {
			return cleanup, err
		}
		r.res.Host.Controller = "go build ./cmd/limbo"
	}
	r.bin = bin
	fmt.Fprintln(r.log, "limbo-bench: starting etcd, kube-apiserver and kube-controller-manager ...")
	crds := []string{filepath.Join(root, "crds")}
	if r.cfg.KroBin != "" {
		crds = append(crds, r.cfg.KroCRDs)
	}
	r.cluster, err = localcluster.Start(ctx, localcluster.Config{BinDir: r.cfg.BinDir, CRDPaths: crds})
	if err != nil {
		return cleanup, err
	}
	stops = append(stops, r.cluster.Stop)

	userCfg := r.cluster.RESTConfig()
	userCfg.QPS, userCfg.Burst = userQPS, 2*userQPS
	scheme := controller.NewScheme()
	if r.user, err = client.New(userCfg, client.Options{Scheme: scheme}); err != nil {
		return cleanup, err
	}
	if r.kube, err = kubernetes.NewForConfig(userCfg); err != nil {
		return cleanup, err
	}
	trackerCtx, stopTracker := context.WithCancel(context.Background())
	stops = append(stops, func() error { stopTracker(); return nil })
	if r.cfg.Shards > 1 {
		// The shard comparison starts its own controllers, in namespaces of its own.
		r.tracker, err = startTracker(trackerCtx, userCfg, []string{shardNamespace(1), shardNamespace(r.cfg.Shards)})
		return cleanup, err
	}
	r.main = newLane(laneThrottled, r.cfg.QPS, r.cfg.Burst)
	lanes := []*lane{r.main}
	if r.cfg.UnthrottledQPS > 0 {
		r.unthrottled = newLane(laneUnthrottled, r.cfg.UnthrottledQPS, r.cfg.UnthrottledBurst)
		lanes = append(lanes, r.unthrottled)
	}
	var watched []string
	for _, l := range lanes {
		if err := r.createNamespaces(ctx, l.floorNS, l.bundleFloorNS, l.bundlesNS, l.warmupNS); err != nil {
			return cleanup, err
		}
		watched = append(watched, l.bundlesNS, l.warmupNS)
	}
	if r.tracker, err = startTracker(trackerCtx, userCfg, watched); err != nil {
		return cleanup, err
	}
	if err := r.startLane(ctx, r.main); err != nil {
		return cleanup, err
	}
	r.ctrl = r.main.ctrl
	stops = append(stops, func() error { r.ctrl.Stop(); return nil })
	if err := r.heapProfile(ctx, r.ctrl, "heap-start.pprof"); err != nil {
		return cleanup, err
	}
	m, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return cleanup, err
	}
	r.startHeapMiB = round1(m.Sum("go_memstats_heap_alloc_bytes", nil) / mib)
	r.startRSSMiB = round1(m.Sum("process_resident_memory_bytes", nil) / mib)
	return cleanup, nil
}

// runNoOp makes every Bundle reconcile with nothing to change — a label on one of
// its objects, which limbo watches but does not own — and counts the API server's
// requests until the controller is idle again.
func (r *runner) runNoOp(ctx context.Context) error {
	n := r.cfg.Bundles
	fmt.Fprintf(r.log, "limbo-bench: no-op: labelling one managed ConfigMap of each of %d Bundles ...\n", n)
	if err := r.quiesce(ctx); err != nil {
		return err
	}
	// An idle window first: what the API server serves without us.
	b0, err := r.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	idleStart := time.Now()
	time.Sleep(5 * time.Second)
	b1, err := r.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	idle := time.Since(idleStart)

	c0, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	s0, err := r.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := parallel(ctx, userConcurrency, n, func(ctx context.Context, i int) error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(nsBundles)
		u.SetName(configMapName(i, 0))
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"1"}}}`, pokeLabel)
		return r.user.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)))
	}); err != nil {
		return err
	}
	reconciles := func(s controllerprocess.Samples) float64 {
		return s.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "bundle"})
	}
	// Every Bundle's reconcile, then silence.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		m, err := r.ctrl.Metrics(ctx)
		if err != nil {
			return err
		}
		if reconciles(m)-reconciles(c0) >= float64(n) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %.0f of %d reconciles after 5m", reconciles(m)-reconciles(c0), n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := r.quiesce(ctx); err != nil {
		return err
	}
	s1, err := r.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	window := time.Since(start)
	c1, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	by := Delta(s0, s1)
	by["PATCH configmaps"] -= float64(n) // the trigger's own writes
	if by["PATCH configmaps"] == 0 {
		delete(by, "PATCH configmaps")
	}
	res := &NoOp{
		Bundles: n, Reconciles: reconciles(c1) - reconciles(c0), WindowSeconds: round1(window.Seconds()),
		ByRequest: by, TriggerWrites: n, Goal: GoalNoOpWrites,
		Background:         Delta(b0, b1),
		ControllerRequests: Delta(c0.By("rest_client_requests_total", "method"), c1.By("rest_client_requests_total", "method")),
		Note:               fmt.Sprintf("%s; idle window %.1fs", noOpBackgroundNote, idle.Seconds()),
	}
	for k, v := range by {
		switch verb, _, _ := strings.Cut(k, " "); verb {
		case "GET", "LIST":
			res.Reads += v
		case "WATCH":
			res.Watches += v
		default:
			res.Writes += v
		}
	}
	res.WritesPerBundle = round3(res.Writes / float64(n))
	res.ReadsPerBundle = round3(res.Reads / float64(n))
	res.Met = res.WritesPerBundle <= res.Goal
	r.res.NoOp = res
	fmt.Fprintf(r.log, "limbo-bench: no-op: %.2f writes and %.2f reads per Bundle\n", res.WritesPerBundle, res.ReadsPerBundle)
	return nil
}

// apiserverMetrics scrapes the API server's /metrics.
func (r *runner) apiserverMetrics(ctx context.Context) (controllerprocess.Samples, error) {
	body, err := r.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server /metrics: %w", err)
	}
	return controllerprocess.ParseMetrics(string(body))
}

// apiserverRequests is apiserver_request_total by "VERB group/resource/subresource",
// without the control plane's own housekeeping, which no Bundle of the benchmark
// causes: Leases (heartbeats and leader election; the controller runs without
// leader election here), Endpoints and EndpointSlices (the API server's own
// reconciler of the kubernetes Service) and discovery (no resource), which
// kube-controller-manager polls.
func (r *runner) apiserverRequests(ctx context.Context) (map[string]float64, error) {
	samples, err := r.apiserverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range samples {
		if s.Name != "apiserver_request_total" {
			continue
		}
		res := s.Labels["resource"]
		switch res {
		case "", "leases", "endpoints", "endpointslices":
			continue
		}
		if g := s.Labels["group"]; g != "" {
			res = g + "/" + res
		}
		if sub := s.Labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[s.Labels["verb"]+" "+res] += s.Value
	}
	return out, nil
}

// runDeletion removes K objects (each with a deletion delay) from their Bundles
// and compares when each goes with its deadline.
func (r *runner) runDeletion(ctx context.Context) error {
	k := r.work.deletions()
	fmt.Fprintf(r.log, "limbo-bench: deletion: removing %d objects (delays %s..%s) from their Bundles ...\n", k, r.cfg.MinDelay, r.cfg.MaxDelay)
	before, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for i, js := range r.work.removed {
		for _, j := range js {
			keys = append(keys, nsBundles+"/"+configMapName(i, j))
		}
	}
	sort.Strings(keys)
	if _, err := r.updateBundles(ctx, sortedInts(r.work.removed), func(i, j int) bool { return containsInt(r.work.removed[i], j) }); err != nil {
		return err
	}
	ctx2, cancel := context.WithTimeout(ctx, r.cfg.MaxDelay+5*time.Minute)
	defer cancel()
	times, err := r.tracker.waitDeleted(ctx2, keys, r.log, r.ctrl.Alive)
	if err != nil {
		return err
	}
	res := &Lateness{Objects: k, Goal: GoalLatenessP99}
	var late []float64
	for _, key := range keys {
		t := times[key]
		if t[0].IsZero() {
			res.Unobserved++
			continue
		}
		late = append(late, t[1].Sub(t[0]).Seconds())
		res.Samples = append(res.Samples, LatenessSample{Name: key, Deadline: t[0].UTC(), Lateness: round3(t[1].Sub(t[0]).Seconds())})
	}
	sort.SliceStable(res.Samples, func(a, b int) bool { return res.Samples[a].Deadline.Before(res.Samples[b].Deadline) })
	sorted := sortedCopy(late)
	if len(sorted) > 0 {
		res.P50, res.P99 = round3(percentile(sorted, percentileP50)), round3(percentile(sorted, percentileP99))
		res.Min, res.Max = round3(sorted[0]), round3(sorted[len(sorted)-1])
	}
	res.Met = len(sorted) > 0 && res.P99 <= res.Goal && res.Unobserved == 0
	after, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	res.ControllerMean = histogramMean(before, after, "limbo_deletion_lateness_seconds", nil)
	res.QueueWaitMean = histogramMean(before, after, "workqueue_queue_duration_seconds", map[string]string{"name": "bundle"})
	res.ReconcileMean = histogramMean(before, after, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": "bundle"})
	res.ControllerRequests = Delta(before.By("rest_client_requests_total", "method"), after.By("rest_client_requests_total", "method"))
	r.res.Lateness = res
	fmt.Fprintf(r.log, "limbo-bench: deletion: lateness p50 %.3fs, p99 %.3fs, max %.3fs\n", res.P50, res.P99, res.Max)
	return nil
}

// histogramMean is the mean of the observations of histogram name (with labels
// match) between two scrapes.
func histogramMean(before, after controllerprocess.Samples, name string, match map[string]string) float64 {
	count := after.Sum(name+"_count", match) - before.Sum(name+"_count", match)
	if count <= 0 {
		return 0
	}
	return round3((after.Sum(name+"_sum", match) - before.Sum(name+"_sum", match)) / count)
}

// runMemory puts the removed objects back, tops the Bundles up to MemoryBundles
// and reads the controller's memory once all converged.
func (r *runner) runMemory(ctx context.Context) error {
	total := max(r.cfg.MemoryBundles, r.cfg.Bundles)
	fmt.Fprintf(r.log, "limbo-bench: memory: converging %d Bundles × %d ConfigMaps ...\n", total, r.cfg.Objects)
	before, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	stopProfiles := r.cpuProfiles(ctx, r.ctrl, "cpu-memory")
	start := time.Now()
	want := map[string]int64{}
	if r.cfg.Deletions > 0 {
		gens, err := r.updateBundles(ctx, sortedInts(r.work.removed), nil)
		if err != nil {
			return err
		}
		for name, gen := range gens {
			want[nsBundles+"/"+name] = gen
		}
	}
	var extra []int
	for i := r.cfg.Bundles; i < total; i++ {
		extra = append(extra, i)
		want[nsBundles+"/"+bundleName(i)] = 1
	}
	if err := parallel(ctx, userConcurrency, len(extra), func(ctx context.Context, k int) error {
		b, err := r.work.bundle(nsBundles, extra[k], nil)
		if err != nil {
			return err
		}
		return r.user.Create(ctx, b)
	}); err != nil {
		return err
	}
	last, err := r.tracker.waitReady(ctx, want, "memory", r.log, r.ctrl.Alive)
	stopProfiles()
	if err != nil {
		return err
	}
	m := &Memory{Bundles: total, Objects: total * r.cfg.Objects, Goal: GoalMemoryMiB, PeakGoal: GoalPeakMemoryMiB, StartHeapMiB: r.startHeapMiB, StartRSSMiB: r.startRSSMiB}
	if len(want) > 0 {
		m.ConvergeSecond = round1(last.Sub(start).Seconds())
	}
	if err := r.quiesce(ctx); err != nil {
		return err
	}
	// The heap profile request runs a garbage collection first: the heap figure
	// is the live heap.
	if err := r.heapProfile(ctx, r.ctrl, "heap-memory.pprof"); err != nil {
		return err
	}
	s, err := r.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	m.ControllerCPUSeconds = round1(s.Sum("process_cpu_seconds_total", nil) - before.Sum("process_cpu_seconds_total", nil))
	m.HeapMiB = round1(s.Sum("go_memstats_heap_alloc_bytes", nil) / mib)
	m.RSSAfterGCMiB = round1(s.Sum(rssMetric, nil) / mib)
	if s, m.SettleSeconds, err = settle(ctx, r.ctrl, s); err != nil {
		return err
	}
	m.HeapInuseMiB = round1(s.Sum("go_memstats_heap_inuse_bytes", nil) / mib)
	m.HeapIdleNotReleasedMiB = round1((s.Sum("go_memstats_heap_idle_bytes", nil) - s.Sum("go_memstats_heap_released_bytes", nil)) / mib)
	m.GoSysMiB = round1(s.Sum("go_memstats_sys_bytes", nil) / mib)
	m.RSSMiB = round1(s.Sum(rssMetric, nil) / mib)
	if file, err := r.ctrl.FileRSS(); err == nil {
		m.FileRSSMiB = round1(file / mib)
	}
	if peak, err := r.ctrl.PeakRSS(); err == nil {
		m.PeakRSSMiB = round1(peak / mib)
	}
	m.Met = m.RSSMiB <= m.Goal && m.PeakRSSMiB <= m.PeakGoal
	if m.Objects < goalMemoryObjects {
		m.Met = false
	}
	r.res.Memory = m
	fmt.Fprintf(r.log, "limbo-bench: memory: %d objects: heap %.1f MiB, RSS %.1f MiB (peak %.1f MiB)\n", m.Objects, m.HeapMiB, m.RSSMiB, m.PeakRSSMiB)
	return nil
}

// Settling: after the garbage collection that ends a converge, the Go runtime
// returns the freed heap to the OS in the background (its scavenger), within
// seconds. The steady RSS is read once the RSS has stopped falling.
const (
	settlePoll  = 2 * time.Second
	settleQuiet = 10 * time.Second // no fall of settleStep or more for this long
	settleStep  = 1 << 20
	settleLimit = 90 * time.Second
	rssMetric   = "process_resident_memory_bytes"
)

// settle polls the controller p's metrics, starting from the scrape s just
// taken, until its RSS has not fallen by a MiB for settleQuiet, or for at most
// settleLimit, and returns the last metrics and how long it waited.
func settle(ctx context.Context, p *controllerprocess.Process, s controllerprocess.Samples) (controllerprocess.Samples, float64, error) {
	start := time.Now()
	low, lowAt := s.Sum(rssMetric, nil), start
	var err error
	for time.Since(lowAt) < settleQuiet && time.Since(start) < settleLimit {
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(settlePoll):
		}
		if s, err = p.Metrics(ctx); err != nil {
			return nil, 0, err
		}
		if rss := s.Sum(rssMetric, nil); rss <= low-settleStep {
			low, lowAt = rss, time.Now()
		}
	}
	return s, round1(time.Since(start).Seconds()), nil
}

// updateBundles rewrites the Bundles of indexes with every object except those
// skip rejects, and returns their new generations by name.
func (r *runner) updateBundles(ctx context.Context, indexes []int, skip func(i, j int) bool) (map[string]int64, error) {
	var mu sync.Mutex
	gens := map[string]int64{}
	err := parallel(ctx, userConcurrency, len(indexes), func(ctx context.Context, k int) error {
		i := indexes[k]
		want, err := r.work.bundle(nsBundles, i, func(j int) bool { return skip != nil && skip(i, j) })
		if err != nil {
			return err
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur limbov1alpha1.Bundle
			if err := r.user.Get(ctx, client.ObjectKeyFromObject(want), &cur); err != nil {
				return err
			}
			cur.Spec = want.Spec
			if err := r.user.Update(ctx, &cur); err != nil {
				return err
			}
			mu.Lock()
			gens[cur.Name] = cur.Generation
			mu.Unlock()
			return nil
		})
	})
	return gens, err
}

// quiesce waits until the benchmark's controller is idle.
func (r *runner) quiesce(ctx context.Context) error { return quiesce(ctx, r.ctrl) }

// quiesce waits until the controller p has sent no request and finished no
// reconcile for a while, with an empty work queue.
func quiesce(ctx context.Context, p *controllerprocess.Process) error {
	return quiesceWithin(ctx, p, 5*time.Minute)
}

// quiesceWithin is quiesce, failing after limit.
func quiesceWithin(ctx context.Context, p *controllerprocess.Process, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last, since := -1.0, time.Now()
	for {
		m, err := p.Metrics(ctx)
		if err != nil {
			return err
		}
		activity := m.Sum("rest_client_requests_total", nil) + m.Sum("controller_runtime_reconcile_total", nil)
		depth := m.Sum("workqueue_depth", nil)
		switch {
		case activity != last || depth > 0:
			last, since = activity, time.Now()
		case time.Since(since) >= quiet:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the controller did not go idle within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// cpuProfiles records consecutive 10-second CPU profiles of the controller p into
// the profile directory until stop is called.
func (r *runner) cpuProfiles(ctx context.Context, p *controllerprocess.Process, prefix string) (stop func()) {
	if r.cfg.ProfileDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	r.profiles.Add(1)
	go func() {
		defer r.profiles.Done()
		for k := 1; ; k++ {
			select {
			case <-done:
				return
			default:
			}
			path := filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("%s-%03d.pprof", prefix, k))
			if err := p.Profile(ctx, "profile", "seconds=10", path); err != nil {
				fmt.Fprintf(r.log, "limbo-bench: CPU profile: %v\n", err)
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// heapProfile runs a garbage collection in the controller p (through its heap
// profile endpoint) and keeps the profile when a profile directory is set.
func (r *runner) heapProfile(ctx context.Context, p *controllerprocess.Process, name string) error {
	path := filepath.Join(r.workDir, name)
	if r.cfg.ProfileDir != "" {
		path = filepath.Join(r.cfg.ProfileDir, name)
	}
	return p.Profile(ctx, "heap", "gc=1", path)
}

// parallel runs do(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, workers, n int, do func(ctx context.Context, k int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				if err := do(ctx, k); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for k := range n {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	for err == nil {
		if data, readErr := os.ReadFile(filepath.Join(dir, "go.mod")); readErr == nil && strings.Contains(string(data), "module github.com/limbo-dev/limbo\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("the limbo repository is not above the working directory: use -repo")
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
