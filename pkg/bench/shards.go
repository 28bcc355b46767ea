package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// shardLabel splits the shard workload's Bundles: Bundle i is labelled i mod the
// number of shards, in every run, so that the runs differ only in how many
// controllers share the Bundles.
const shardLabel = "limbo.dev/shard"

// Shards compares converging the same workload with one controller and with
// several, each of a shard (--watch-label-selector), on the same control plane.
type Shards struct {
	Bundles int `json:"bundles"`
	Objects int `json:"objects"`
	// Runs are the one-controller run, then the sharded run.
	Runs []ShardRun `json:"runs"`
	// Note says what differs between the runs besides the number of controllers.
	Note string `json:"note"`
}

// ShardRun is one converge of the shard workload.
type ShardRun struct {
	Shards          int     `json:"shards"`
	ConvergeSeconds float64 `json:"convergeSeconds"`
	// RestartSeconds is how long the controllers, every one stopped and
	// started again once the workload converged (a rollout), took from their
	// start until the last of them went idle (see restartShards).
	RestartSeconds float64 `json:"restartSeconds"`
	// Controllers are the figures of each controller process.
	Controllers []ShardController `json:"controllers"`
}

// ShardController is what one controller process did and took in a run.
type ShardController struct {
	Selector string `json:"selector"`
	// Requests is its client's count by method during the converge; CPUSeconds
	// the CPU it used; HeapMiB (live, after a GC) and RSSMiB its memory once
	// converged and idle.
	Requests   map[string]float64 `json:"requests"`
	CPUSeconds float64            `json:"cpuSeconds"`
	HeapMiB    float64            `json:"heapMiB"`
	RSSMiB     float64            `json:"rssMiB"`
	PeakRSSMiB float64            `json:"peakRSSMiB"`
	// RestartRequests and RestartCPUSeconds are what the process started
	// again cost from its start until idle, its caches' initial lists
	// included.
	RestartRequests   map[string]float64 `json:"restartRequests"`
	RestartCPUSeconds float64            `json:"restartCPUSeconds"`
}

const shardNote = "each run converges its own namespace (new Bundles, new ConfigMaps) with controllers restricted to it (--namespaces); " +
	"the sharded run follows the first, so the API server holds the first run's objects too. Every controller has its own " +
	"client rate limit (--kube-api-qps, --kube-api-burst) and --workers: shards add API budget as well as CPU."

// shardNamespace is the namespace of the run with n controllers.
func shardNamespace(n int) string { return "bench-shards-" + strconv.Itoa(n) }

// runShards converges the shard workload with one controller, then with
// cfg.Shards controllers, each in a fresh namespace.
func (r *runner) runShards(ctx context.Context) error {
	res := &Shards{Bundles: r.cfg.MemoryBundles, Objects: r.cfg.Objects, Note: shardNote}
	r.res.Shards = res
	for _, n := range []int{1, r.cfg.Shards} {
		run, err := r.convergeShards(ctx, n)
		if err != nil {
			return fmt.Errorf("%d shard(s): %w", n, err)
		}
		res.Runs = append(res.Runs, *run)
	}
	return nil
}

// convergeShards starts n controllers (n = 1: one without a selector), creates
// the workload's Bundles, waits until all are Ready, and reads each controller's
// figures once they are idle.
func (r *runner) convergeShards(ctx context.Context, n int) (*ShardRun, error) {
	ns := shardNamespace(n)
	if err := r.user.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	procs := make([]*controllerprocess.Process, n)
	selectors := make([]string, n)
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
	for k := range n {
		extra := []string{"--namespaces", ns}
		if n > 1 {
			selectors[k] = shardLabel + "=" + strconv.Itoa(k)
			extra = append(extra, "--watch-label-selector", selectors[k])
		}
		fmt.Fprintf(r.log, "limbo-bench: shards: starting controller %d of %d %v ...\n", k+1, n, extra)
		p, err := startController(ctx, r.bin, r.cluster.KubeconfigPath, filepath.Join(r.workDir, fmt.Sprintf("limbo-controller-shards-%d-%d.log", n, k)), r.cfg, extra...)
		if err != nil {
			return nil, err
		}
		procs[k] = p
	}
	alive := func() error {
		var errs []error
		for _, p := range procs {
			errs = append(errs, p.Alive())
		}
		return errors.Join(errs...)
	}
	before := make([]controllerprocess.Samples, n)
	for k, p := range procs {
		var err error
		if before[k], err = p.Metrics(ctx); err != nil {
			return nil, err
		}
	}

	total := r.cfg.MemoryBundles
	fmt.Fprintf(r.log, "limbo-bench: shards: converging %d Bundles × %d ConfigMaps with %d controller(s) ...\n", total, r.cfg.Objects, n)
	want := map[string]int64{}
	bundles := make([]*limbov1alpha1.Bundle, total)
	for i := range bundles {
		b, err := r.work.bundle(ns, i, nil)
		if err != nil {
			return nil, err
		}
		b.Labels = map[string]string{shardLabel: strconv.Itoa(i % r.cfg.Shards)}
		bundles[i] = b
		want[ns+"/"+b.Name] = 1
	}
	start := time.Now()
	if err := parallel(ctx, userConcurrency, total, func(ctx context.Context, i int) error { return r.user.Create(ctx, bundles[i]) }); err != nil {
		return nil, err
	}
	last, err := r.tracker.waitReady(ctx, want, fmt.Sprintf("%d shard(s)", n), r.log, alive)
	if err != nil {
		return nil, err
	}
	run := &ShardRun{Shards: n, ConvergeSeconds: round1(last.Sub(start).Seconds())}
	fmt.Fprintf(r.log, "limbo-bench: shards: %d controller(s) converged in %.1fs\n", n, run.ConvergeSeconds)
	for k, p := range procs {
		if err := quiesce(ctx, p); err != nil {
			return nil, err
		}
		// The heap profile request runs a garbage collection first.
		if err := p.Profile(ctx, "heap", "gc=1", filepath.Join(r.workDir, fmt.Sprintf("heap-shards-%d-%d.pprof", n, k))); err != nil {
			return nil, err
		}
		after, err := p.Metrics(ctx)
		if err != nil {
			return nil, err
		}
		c := ShardController{
			Selector:   selectors[k],
			Requests:   Delta(before[k].By("rest_client_requests_total", "method"), after.By("rest_client_requests_total", "method")),
			CPUSeconds: round1(after.Sum("process_cpu_seconds_total", nil) - before[k].Sum("process_cpu_seconds_total", nil)),
			HeapMiB:    round1(after.Sum("go_memstats_heap_alloc_bytes", nil) / mib),
			RSSMiB:     round1(after.Sum("process_resident_memory_bytes", nil) / mib),
		}
		if peak, err := p.PeakRSS(); err == nil {
			c.PeakRSSMiB = round1(peak / mib)
		}
		run.Controllers = append(run.Controllers, c)
	}
	if err := r.restartShards(ctx, procs, run); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	return run, nil
}

// restartShards stops every controller of run and starts it again, all at
// once as a rollout of their Deployments would, and records what the new
// processes cost until they are idle. A controller's first pass of each
// Bundle after a start reads it and checks its objects (the no-op check has
// no memory of the last process's applies); a sharded controller's also looks
// for each Bundle's objects with the API server, one LIST per kind (a moved
// Bundle's objects carry another shard's label, which its cache does not
// select: see onboardedBundles in pkg/controller/bundle).
func (r *runner) restartShards(ctx context.Context, procs []*controllerprocess.Process, run *ShardRun) error {
	for _, p := range procs {
		p.Stop()
	}
	fmt.Fprintf(r.log, "limbo-bench: shards: restarting %d controller(s) ...\n", len(procs))
	start := time.Now()
	if err := parallel(ctx, len(procs), len(procs), func(ctx context.Context, k int) error {
		p, err := procs[k].StartAgain(ctx)
		if err != nil {
			return err
		}
		procs[k] = p
		return nil
	}); err != nil {
		return err
	}
	var last time.Time
	for k, p := range procs {
		if err := quiesce(ctx, p); err != nil {
			return err
		}
		// quiesce returns once the controller has been idle for quiet.
		if idle := time.Now().Add(-quiet); idle.After(last) {
			last = idle
		}
		m, err := p.Metrics(ctx)
		if err != nil {
			return err
		}
		run.Controllers[k].RestartRequests = m.By("rest_client_requests_total", "method")
		run.Controllers[k].RestartCPUSeconds = round1(m.Sum("process_cpu_seconds_total", nil))
	}
	run.RestartSeconds = round1(last.Sub(start).Seconds())
	fmt.Fprintf(r.log, "limbo-bench: shards: %d controller(s) idle %.1fs after their restart\n", len(procs), run.RestartSeconds)
	return nil
}
