package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// kro's side of the peer comparison (make bench-peers): the workload's Bundle as
// a ResourceGraphDefinition whose instances stand for Bundles.
const (
	kroName = "kro"
	// kroNamespace holds the instances and their ConfigMaps.
	kroNamespace = "bench-kro"
	// kroGraphName is the ResourceGraphDefinition; kroKind the kind of its
	// instances, which kro serves as a CRD of kro.run/v1alpha1.
	kroGraphName = "limbo-bench"
	kroKind      = "LimboBenchBundle"
	// kroWarmup is the instance created, untimed, before the timed ones.
	kroWarmup = "warmup"
	// kroInstanceActive is status.state of an instance all of whose resources
	// are in place.
	kroInstanceActive = "ACTIVE"
	// kroGraphActive is status.state of a ResourceGraphDefinition whose CRD and
	// controller are serving.
	kroGraphActive = "Active"
)

var (
	kroGraphGVK    = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "ResourceGraphDefinition"}
	kroInstanceGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: kroKind}
)

// kroGraph is the workload's Bundle of objects ConfigMaps as a kro
// ResourceGraphDefinition: resource cmJJ is ConfigMap j, named and labelled
// after the instance, as limbo's Bundle i holds ConfigMap j named after the
// Bundle. The templates are literal apart from the instance's name, as the
// Bundles' objects are.
func kroGraph(objects int) *unstructured.Unstructured {
	resources := make([]any, objects)
	for j := range objects {
		resources[j] = map[string]any{
			"id":       fmt.Sprintf("cm%02d", j),
			"template": configMapTemplate("${schema.metadata.name}", j),
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": kroGraphName},
		"spec": map[string]any{
			"schema": map[string]any{
				"apiVersion": kroInstanceGVK.Version,
				"kind":       kroKind,
				// The instances carry nothing: every object comes from the name.
				"spec": map[string]any{"note": `string | default=""`},
			},
			"resources": resources,
		},
	}}
	u.SetGroupVersionKind(kroGraphGVK)
	return u
}

// kroInstance is the instance standing for Bundle name.
func kroInstance(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(kroInstanceGVK)
	u.SetNamespace(kroNamespace)
	u.SetName(name)
	return u
}

// kroFlags are kro's settings matched to limbo's: the client's QPS and burst
// (--client-qps, --client-burst), its instance workers
// (--dynamic-controller-concurrent-reconciles, limbo's --workers), no leader
// election (limbo runs without in the benchmark) and the same log level.
func kroFlags(qps float32, burst, workers int, logLevel string) []string {
	return []string{
		"--client-qps=" + formatQPS(qps),
		"--client-burst=" + strconv.Itoa(burst),
		"--dynamic-controller-concurrent-reconciles=" + strconv.Itoa(workers),
		"--leader-elect=false",
		"--zap-log-level=" + logLevel,
	}
}

// runKro converges the unthrottled workload with kro: it starts kro (a process
// with the control plane's admin kubeconfig, as limbo runs here), defines the
// graph, converges one instance untimed, then times one instance per Bundle
// until each is ACTIVE with its ConfigMaps seen, and stops kro.
func (r *runner) runKro(ctx context.Context) error {
	u := r.res.Unthrottled
	flags := kroFlags(u.QPS, u.Burst, r.cfg.Workers, r.cfg.ControllerLogLevel)
	if err := r.createNamespaces(ctx, kroNamespace); err != nil {
		return err
	}
	fmt.Fprintf(r.log, "limbo-bench: kro: starting %s %v ...\n", r.cfg.KroBin, flags)
	p, err := controllerprocess.Start(ctx, controllerprocess.Config{
		Bin: r.cfg.KroBin, Command: []string{}, Name: kroName, Kubeconfig: r.cluster.KubeconfigPath,
		LogPath: filepath.Join(r.workDir, "kro.log"), Args: flags,
	})
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := r.user.Create(ctx, kroGraph(r.cfg.Objects)); err != nil {
		return fmt.Errorf("create the ResourceGraphDefinition: %w", err)
	}
	if err := r.waitKroGraph(ctx, p); err != nil {
		return err
	}
	t, err := startKroTracker(ctx, r)
	if err != nil {
		return err
	}
	fmt.Fprintln(r.log, "limbo-bench: kro: warm-up ...")
	if err := r.user.Create(ctx, kroInstance(kroWarmup)); err != nil {
		return err
	}
	if _, err := t.wait(ctx, []string{kroWarmup}, r.cfg.Objects, "kro warm-up", r.log, p.Alive); err != nil {
		return err
	}
	_ = quiesceWithin(ctx, p, kroQuiet)
	before, err := p.Metrics(ctx)
	if err != nil {
		return err
	}
	names := make([]string, r.cfg.Bundles)
	for i := range names {
		names[i] = bundleName(i)
	}
	fmt.Fprintf(r.log, "limbo-bench: kro: converge: creating %d instances of %d ConfigMaps ...\n", len(names), r.cfg.Objects)
	cpu0, err := readCPU(r.pids(kroName, p.Pid()))
	if err != nil {
		return err
	}
	start := time.Now()
	if err := parallel(ctx, userConcurrency, len(names), func(ctx context.Context, i int) error {
		return r.user.Create(ctx, kroInstance(names[i]))
	}); err != nil {
		return err
	}
	last, err := t.wait(ctx, names, r.cfg.Objects, "kro converge", r.log, p.Alive)
	if err != nil {
		return err
	}
	cpu1, err := readCPU(r.pids(kroName, p.Pid()))
	if err != nil {
		return err
	}
	k := &Peer{Name: kroName, Version: r.cfg.KroVersion, Instances: len(names), Objects: len(names) * r.cfg.Objects, Flags: flags,
		Seconds: round3(last.Sub(start).Seconds()), CPU: cpuUse(cpu0, cpu1)}
	k.RatioToFloor = round3(k.Seconds / u.FloorSeconds)
	k.LimboSpeedup = round3(k.Seconds / u.ControllerSeconds)
	fmt.Fprintf(r.log, "limbo-bench: kro: converge: %.1fs (floor %.1fs, ratio %.2f; limbo %.1fs)\n", k.Seconds, u.FloorSeconds, k.RatioToFloor, u.ControllerSeconds)
	// kro may keep requeueing converged instances; its figures are read once it
	// is idle or after kroQuiet's bound, whichever comes first.
	_ = quiesceWithin(ctx, p, kroQuiet)
	after, err := p.Metrics(ctx)
	if err != nil {
		return err
	}
	k.Requests = Delta(before.By("rest_client_requests_total", "method"), after.By("rest_client_requests_total", "method"))
	k.CPUSeconds = round1(after.Sum("process_cpu_seconds_total", nil) - before.Sum("process_cpu_seconds_total", nil))
	k.RSSMiB = round1(after.Sum("process_resident_memory_bytes", nil) / mib)
	if peak, err := p.PeakRSS(); err == nil {
		k.PeakRSSMiB = round1(peak / mib)
	}
	r.res.Kro = k
	return nil
}

// kroQuiet bounds the wait for kro to go idle.
const kroQuiet = 30 * time.Second

// waitKroGraph waits until kro reports the ResourceGraphDefinition Active (its
// instances' CRD is served).
func (r *runner) waitKroGraph(ctx context.Context, p *controllerprocess.Process) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		g := &unstructured.Unstructured{}
		g.SetGroupVersionKind(kroGraphGVK)
		if err := r.user.Get(ctx, client.ObjectKey{Name: kroGraphName}, g); err != nil {
			return err
		}
		state, _, _ := unstructured.NestedString(g.Object, "status", "state")
		if state == kroGraphActive {
			return nil
		}
		if err := p.Alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ResourceGraphDefinition %s is %q after 2m, not %s: %v", kroGraphName, state, kroGraphActive, g.Object["status"])
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kroTracker watches kro's instances (when each is first seen ACTIVE) and
// their ConfigMaps (when each is first seen) in kroNamespace.
type kroTracker struct {
	mu      sync.Mutex
	active  map[string]time.Time
	objects map[string]time.Time
	notify  notifier
}

func startKroTracker(ctx context.Context, r *runner) (*kroTracker, error) {
	cfg := r.cluster.RESTConfig()
	cfg.QPS, cfg.Burst = userQPS, 2*userQPS
	c, err := cache.New(cfg, cache.Options{Scheme: controller.NewScheme(), DefaultNamespaces: map[string]cache.Config{kroNamespace: {}}})
	if err != nil {
		return nil, err
	}
	t := &kroTracker{active: map[string]time.Time{}, objects: map[string]time.Time{}, notify: newNotifier()}
	instance := &unstructured.Unstructured{}
	instance.SetGroupVersionKind(kroInstanceGVK)
	if err := startWatches(ctx, c, "the kro tracker's informers",
		watch{instance, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    t.observeInstance,
			UpdateFunc: func(_, obj any) { t.observeInstance(obj) },
		}},
		watch{&corev1.ConfigMap{}, toolscache.ResourceEventHandlerFuncs{AddFunc: t.observeObject}},
	); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *kroTracker) observeInstance(obj any) {
	now := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state != kroInstanceActive {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.active[u.GetName()]; !seen {
		t.active[u.GetName()] = now
		t.notify.poke()
	}
}

func (t *kroTracker) observeObject(obj any) {
	now := time.Now()
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.objects[cm.Name]; !seen {
		t.objects[cm.Name] = now
		t.notify.poke()
	}
}

// wait waits until every instance of names has been seen ACTIVE and each of its
// objects ConfigMaps seen, and returns when the last of these happened.
func (t *kroTracker) wait(ctx context.Context, names []string, objects int, what string, progress io.Writer, check func() error) (time.Time, error) {
	return waitUntil(ctx, what, "instances ACTIVE with their ConfigMaps", t.notify, progress, check, func() (int, int, time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		var last time.Time
		done := 0
		for _, name := range names {
			at, ok := t.active[name]
			for j := 0; ok && j < objects; j++ {
				var seen time.Time
				if seen, ok = t.objects[name+"-"+resourceName(j)]; ok && seen.After(at) {
					at = seen
				}
			}
			if ok {
				done++
				if at.After(last) {
					last = at
				}
			}
		}
		return done, len(names), last
	})
}
