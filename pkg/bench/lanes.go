package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
	"github.com/limbo-dev/limbo/pkg/localcluster"
)

// The converge lanes: the controller's defaults, and the same workload without
// the client's rate limiter in the way.
const (
	laneThrottled   = "throttled"
	laneUnthrottled = "unthrottled"
)

// floorFieldOwner is the field manager of the floor's applies.
const floorFieldOwner = "limbo-bench-floor"

// lane is one converge measurement at one client setting (QPS and burst of the
// controller and of the floor): the floor applies the workload's objects
// directly in a namespace of its own, the lane's controller converges the same
// objects as Bundles in another. Each lane's controller watches only the lane's
// namespaces (--namespaces), so that no controller sees another lane's objects
// or the floor's.
type lane struct {
	name                         string
	qps                          float32
	burst                        int
	floorNS, bundlesNS, warmupNS string
	// bundleFloorNS holds the run of the floor with the Bundles' own writes
	// (runBundleFloor); no controller watches it.
	bundleFloorNS string
	floor         client.Client
	ctrl          *controllerprocess.Process
	// convergedStatus is the status the controller wrote for the warm-up
	// Bundle: the bundle floor writes it for each of its Bundles.
	convergedStatus limbov1alpha1.BundleStatus
}

// newLane names a lane's namespaces: the throttled lane keeps the names the
// benchmark always had (bench-floor, bench-bundles, bench-warmup).
func newLane(name string, qps float32, burst int) *lane {
	suffix := ""
	if name != laneThrottled {
		suffix = "-" + name
	}
	return &lane{
		name: name, qps: qps, burst: burst,
		floorNS: "bench-floor" + suffix, bundlesNS: "bench-bundles" + suffix, warmupNS: "bench-warmup" + suffix,
		bundleFloorNS: "bench-bundle-floor" + suffix,
	}
}

// createNamespaces creates the namespaces names.
func (r *runner) createNamespaces(ctx context.Context, names ...string) error {
	for _, ns := range names {
		if err := r.user.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	return nil
}

// startLane makes the lane's floor client and starts its controller, both with
// the lane's QPS and burst.
func (r *runner) startLane(ctx context.Context, l *lane) error {
	floorCfg := r.cluster.RESTConfig()
	floorCfg.QPS, floorCfg.Burst = l.qps, l.burst
	var err error
	if l.floor, err = client.New(floorCfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
		return err
	}
	cfg := r.cfg
	cfg.QPS, cfg.Burst = l.qps, l.burst
	logName := "limbo-controller.log"
	if l.name != laneThrottled {
		logName = "limbo-controller-" + l.name + ".log"
	}
	fmt.Fprintf(r.log, "limbo-bench: %s: starting %s controller --kube-api-qps=%g --kube-api-burst=%d --workers=%d ...\n", l.name, r.bin, l.qps, l.burst, r.cfg.Workers)
	l.ctrl, err = startController(ctx, r.bin, r.cluster.KubeconfigPath, filepath.Join(r.workDir, logName), cfg,
		"--namespaces", strings.Join([]string{l.bundlesNS, l.warmupNS}, ","))
	return err
}

// runLaneWithOwnController starts the lane's controller, measures the lane and
// stops the controller, so that it costs the later phases nothing.
func (r *runner) runLaneWithOwnController(ctx context.Context, l *lane, c *Converge) error {
	if err := r.startLane(ctx, l); err != nil {
		return err
	}
	defer l.ctrl.Stop()
	return r.runLane(ctx, l, c)
}

// runLane warms the lane up, then times its floor and its controller's converge.
func (r *runner) runLane(ctx context.Context, l *lane, c *Converge) error {
	c.Lane, c.QPS, c.Burst = l.name, l.qps, l.burst
	if err := r.warmup(ctx, l); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := r.runFloor(ctx, l, c); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	// Throttled, both sides wait on their client's rate limiter, and limbo
	// sends its events through a client of their own: only the unthrottled
	// lane's floor with the Bundles' writes tells what limbo's own part is.
	if l.name == laneUnthrottled {
		if err := r.runBundleFloor(ctx, l, c); err != nil {
			return fmt.Errorf("floor with the Bundles' writes: %w", err)
		}
	}
	return r.runConverge(ctx, l, c)
}

// warmup creates one Bundle and applies one Bundle's objects directly, untimed, so
// that neither timed run pays for first-use costs (the API server's first server-
// side apply of a kind, the controller's first watch of ConfigMaps).
func (r *runner) warmup(ctx context.Context, l *lane) error {
	fmt.Fprintf(r.log, "limbo-bench: %s: warm-up ...\n", l.name)
	for j := range r.cfg.Objects {
		obj := r.work.floorObject(l.warmupNS, 0, j)
		obj.SetName("floor-" + obj.GetName())
		if err := l.applyAsFloor(ctx, obj); err != nil {
			return err
		}
	}
	b, err := r.work.bundle(l.warmupNS, 0, nil)
	if err != nil {
		return err
	}
	if err := r.user.Create(ctx, b); err != nil {
		return err
	}
	if _, err := r.tracker.waitReady(ctx, map[string]int64{l.warmupNS + "/" + b.Name: 1}, "warm-up", r.log, l.ctrl.Alive); err != nil {
		return err
	}
	if err := quiesce(ctx, l.ctrl); err != nil {
		return err
	}
	if err := r.user.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		return err
	}
	l.convergedStatus = b.Status
	return nil
}

// runFloor applies the N×M ConfigMaps directly with the lane's QPS and burst and
// the controller's concurrency.
func (r *runner) runFloor(ctx context.Context, l *lane, c *Converge) error {
	n := r.cfg.Bundles * r.cfg.Objects
	fmt.Fprintf(r.log, "limbo-bench: %s: floor: server-side applying %d ConfigMaps with %d workers ...\n", l.name, n, r.cfg.Workers)
	var err error
	c.FloorSeconds, c.FloorCPU, err = r.timed(l, func() error {
		return parallel(ctx, r.cfg.Workers, n, func(ctx context.Context, k int) error {
			return l.applyAsFloor(ctx, r.work.floorObject(l.floorNS, k/r.cfg.Objects, k%r.cfg.Objects))
		})
	})
	if err != nil {
		return err
	}
	c.FloorAPIServerCPUSeconds = c.FloorCPU.ByProcess[localcluster.APIServerBinary]
	c.Objects = n
	fmt.Fprintf(r.log, "limbo-bench: %s: floor: %.1fs\n", l.name, c.FloorSeconds)
	return nil
}

// runBundleFloor times the writes limbo's converge needs the API server to
// take, without a controller: each Bundle's create (by the benchmark's own
// client, as in the converge), and as a plain client with the floor's settings
// and concurrency its ConfigMaps applied with the label and controller owner
// reference limbo gives them (ApplyConcurrency at a time, as limbo applies a
// wave), one status write (the status limbo wrote for the warm-up Bundle, as
// limbo writes it: a merge patch) and one event — in a namespace no controller
// watches. The converge's time over this one is what
// limbo adds of its own: its CPU on the shared cores, its requests beyond these
// (the create-only precondition, watch events of the objects it caches), its
// waits. The headline still compares with the raw-apply floor, as issue 15 asks.
func (r *runner) runBundleFloor(ctx context.Context, l *lane, c *Converge) error {
	fmt.Fprintf(r.log, "limbo-bench: %s: floor with the Bundles' writes: %d Bundles created, their %d ConfigMaps applied, a status and an event each, with %d workers ...\n",
		l.name, r.cfg.Bundles, r.cfg.Bundles*r.cfg.Objects, r.cfg.Workers)
	status, err := json.Marshal(map[string]any{"status": l.convergedStatus})
	if err != nil {
		return err
	}
	applyConcurrency := controller.DefaultOptions().ApplyConcurrency
	c.BundleFloorSeconds, c.BundleFloorCPU, err = r.timed(l, func() error {
		return parallel(ctx, r.cfg.Workers, r.cfg.Bundles, func(ctx context.Context, i int) error {
			return r.writeAsBundleFloor(ctx, l, i, applyConcurrency, status)
		})
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(r.log, "limbo-bench: %s: floor with the Bundles' writes: %.1fs\n", l.name, c.BundleFloorSeconds)
	return nil
}

// writeAsBundleFloor sends, for Bundle i of the bundle floor, what limbo's
// converge makes the API server take (see runBundleFloor).
func (r *runner) writeAsBundleFloor(ctx context.Context, l *lane, i, applyConcurrency int, status []byte) error {
	b, err := r.work.bundle(l.bundleFloorNS, i, nil)
	if err != nil {
		return err
	}
	if err := r.user.Create(ctx, b); err != nil {
		return err
	}
	owner := metav1.NewControllerRef(b, limbov1alpha1.GroupVersion.WithKind("Bundle"))
	if err := parallel(ctx, applyConcurrency, r.cfg.Objects, func(ctx context.Context, j int) error {
		obj := r.work.floorObject(l.bundleFloorNS, i, j)
		obj.SetOwnerReferences([]metav1.OwnerReference{*owner})
		return l.applyAsFloor(ctx, obj)
	}); err != nil {
		return err
	}
	if err := l.floor.Status().Patch(ctx, b, client.RawPatch(types.MergePatchType, status), client.FieldOwner(floorFieldOwner)); err != nil {
		return err
	}
	return l.floor.Create(ctx, appliedEvent(b, r.cfg.Objects))
}

// timed runs do, and returns its wall time (rounded as reported) and the CPU
// the lane's processes used meanwhile.
func (r *runner) timed(l *lane, do func() error) (float64, *CPUUse, error) {
	cpu0, err := readCPU(r.lanePIDs(l))
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	if err := do(); err != nil {
		return 0, nil, err
	}
	seconds := round3(time.Since(start).Seconds())
	cpu1, err := readCPU(r.lanePIDs(l))
	if err != nil {
		return 0, nil, err
	}
	return seconds, cpuUse(cpu0, cpu1), nil
}

// applyAsFloor server-side applies obj as the floor's plain client does.
func (l *lane) applyAsFloor(ctx context.Context, obj *unstructured.Unstructured) error {
	return l.floor.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(floorFieldOwner), client.ForceOwnership)
}

// appliedEvent is the event limbo records for a pass that created b's objects
// (objects of them): one per pass, naming each change.
func appliedEvent(b *limbov1alpha1.Bundle, objects int) *corev1.Event {
	parts := make([]string, objects)
	for j := range parts {
		parts[j] = fmt.Sprintf("resource %q: ConfigMap %s-%s created", resourceName(j), b.Name, resourceName(j))
	}
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, GenerateName: b.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Namespace: b.Namespace, Name: b.Name,
			UID: b.UID, ResourceVersion: b.ResourceVersion},
		Reason: limbov1alpha1.EventCreated, Message: strings.Join(parts, "; "), Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "limbo"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
}

// runConverge creates the N Bundles in the lane's namespace and waits until all
// are Ready.
func (r *runner) runConverge(ctx context.Context, l *lane, c *Converge) error {
	fmt.Fprintf(r.log, "limbo-bench: %s: converge: creating %d Bundles of %d ConfigMaps ...\n", l.name, r.cfg.Bundles, r.cfg.Objects)
	before, err := l.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	profilePrefix := "cpu-converge"
	if l.name != laneThrottled {
		profilePrefix += "-" + l.name
	}
	stopProfiles := r.cpuProfiles(ctx, l.ctrl, profilePrefix)
	want := map[string]int64{}
	bundles := make([]*limbov1alpha1.Bundle, r.cfg.Bundles)
	for i := range bundles {
		if bundles[i], err = r.work.bundle(l.bundlesNS, i, nil); err != nil {
			return err
		}
		want[l.bundlesNS+"/"+bundles[i].Name] = 1
	}
	cpu0, err := readCPU(r.lanePIDs(l))
	if err != nil {
		return err
	}
	start := time.Now()
	if err := parallel(ctx, userConcurrency, len(bundles), func(ctx context.Context, i int) error {
		return r.user.Create(ctx, bundles[i])
	}); err != nil {
		return err
	}
	last, err := r.tracker.waitReady(ctx, want, l.name+" converge", r.log, l.ctrl.Alive)
	stopProfiles()
	if err != nil {
		return err
	}
	cpu1, err := readCPU(r.lanePIDs(l))
	if err != nil {
		return err
	}
	c.CPU = cpuUse(cpu0, cpu1)
	c.APIServerCPUSeconds = c.CPU.ByProcess[localcluster.APIServerBinary]
	c.ControllerSeconds = round3(last.Sub(start).Seconds())
	c.Ratio = round3(c.ControllerSeconds / c.FloorSeconds)
	if c.BundleFloorSeconds > 0 {
		c.BundleFloorRatio = round3(c.ControllerSeconds / c.BundleFloorSeconds)
	}
	c.Goal = GoalConvergeRatio
	c.Met = c.Ratio <= c.Goal
	fmt.Fprintf(r.log, "limbo-bench: %s: converge: %.1fs (floor %.1fs, ratio %.2f)\n", l.name, c.ControllerSeconds, c.FloorSeconds, c.Ratio)
	if err := quiesce(ctx, l.ctrl); err != nil {
		return err
	}
	after, err := l.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	c.ControllerRequests = Delta(before.By("rest_client_requests_total", "method"), after.By("rest_client_requests_total", "method"))
	c.ControllerCPUSeconds = round1(after.Sum("process_cpu_seconds_total", nil) - before.Sum("process_cpu_seconds_total", nil))
	if err := r.heapProfile(ctx, l.ctrl, "heap-converge"+strings.TrimPrefix(profilePrefix, "cpu-converge")+".pprof"); err != nil {
		return err
	}
	m, err := l.ctrl.Metrics(ctx)
	if err != nil {
		return err
	}
	c.HeapMiB = round1(m.Sum("go_memstats_heap_alloc_bytes", nil) / mib)
	c.RSSMiB = round1(m.Sum("process_resident_memory_bytes", nil) / mib)
	return nil
}

// lanePIDs are the processes whose CPU a lane's timed runs account for.
func (r *runner) lanePIDs(l *lane) map[string]int { return r.pids(processController, l.ctrl.Pid()) }

// pids are the processes whose CPU a timed run accounts for: the control
// plane's, the benchmark itself (the floor's client, the creator of Bundles or
// instances, the tracker) and the controller under test, named controller.
func (r *runner) pids(controller string, pid int) map[string]int {
	pids := r.cluster.PIDs()
	pids[processBench] = os.Getpid()
	pids[controller] = pid
	return pids
}

// formatQPS is a QPS as a flag value.
func formatQPS(qps float32) string { return strconv.FormatFloat(float64(qps), 'f', -1, 32) }
