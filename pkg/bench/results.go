package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Goals the figures are compared with (docs/performance.md).
const (
	GoalConvergeRatio = 1.3   // controller time / floor time
	GoalNoOpWrites    = 0.0   // writes per Bundle
	GoalLatenessP99   = 0.1   // seconds
	GoalMemoryMiB     = 100.0 // steady RSS at goalMemoryObjects managed objects
	GoalPeakMemoryMiB = 150.0 // peak RSS while converging them
	goalMemoryObjects = 10000

	mib                = 1 << 20
	percentileP50      = 0.50
	percentileP99      = 0.99
	noOpBackgroundNote = "API server counts leave out the control plane's housekeeping: Leases, Endpoints, EndpointSlices and discovery (the controller runs without leader election here)"
)

// Results are the benchmark's figures; bench-results.json holds them.
type Results struct {
	Started  time.Time `json:"started"`
	Host     Host      `json:"host"`
	Settings Settings  `json:"settings"`
	// Converge is the converge at the controller's defaults (QPS and burst
	// that throttle both sides); Unthrottled the same workload with a client
	// that does not (the headline); Kro the unthrottled workload converged by
	// kro (make bench-peers).
	Converge    Converge  `json:"converge"`
	Unthrottled *Converge `json:"convergeUnthrottled,omitempty"`
	Kro         *Peer     `json:"kro,omitempty"`
	NoOp        *NoOp     `json:"noOp,omitempty"`
	Lateness    *Lateness `json:"deletionLateness,omitempty"`
	Memory      *Memory   `json:"memory,omitempty"`
	Shards      *Shards   `json:"shards,omitempty"`
	// PhaseSeconds is the wall time of each phase, setup included.
	PhaseSeconds map[string]float64 `json:"phaseSeconds"`
	TotalSeconds float64            `json:"totalSeconds"`
}

// Host describes the machine, and how busy it was.
type Host struct {
	CPUs        int    `json:"cpus"`
	GoVersion   string `json:"goVersion"`
	LoadAtStart string `json:"loadAverageAtStart"`
	LoadAtEnd   string `json:"loadAverageAtEnd"`
	// Revision is the repository's `git describe --always --dirty`, when known.
	Revision string `json:"revision,omitempty"`
	// Controller is the limbo binary that ran as the controller.
	Controller string `json:"controller"`
}

// Settings are the parameters of the run.
type Settings struct {
	Preset           string  `json:"preset,omitempty"`
	Bundles          int     `json:"bundles"`
	ObjectsPerBundle int     `json:"objectsPerBundle"`
	QPS              float32 `json:"qps"`
	Burst            int     `json:"burst"`
	Workers          int     `json:"workers"`
	UnthrottledQPS   float32 `json:"unthrottledQPS,omitempty"`
	UnthrottledBurst int     `json:"unthrottledBurst,omitempty"`
	Deletions        int     `json:"deletions"`
	MinDelay         string  `json:"minDelay"`
	MaxDelay         string  `json:"maxDelay"`
	MemoryBundles    int     `json:"memoryBundles,omitempty"`
	Shards           int     `json:"shards,omitempty"`
	// ControllerArgs and ControllerEnv are what -controller-args and
	// -controller-env added.
	ControllerArgs []string `json:"controllerArgs,omitempty"`
	ControllerEnv  []string `json:"controllerEnv,omitempty"`
}

// Converge compares the controller's convergence with the raw-apply floor.
type Converge struct {
	// Lane is "throttled" or "unthrottled"; QPS and Burst the client of the
	// controller and of the floor.
	Lane              string  `json:"lane"`
	QPS               float32 `json:"qps"`
	Burst             int     `json:"burst"`
	Objects           int     `json:"objects"`
	FloorSeconds      float64 `json:"floorSeconds"`
	ControllerSeconds float64 `json:"controllerSeconds"`
	Ratio             float64 `json:"ratio"`
	Goal              float64 `json:"goal"`
	Met               bool    `json:"met"`
	// BundleFloorSeconds is the floor with the Bundles' own writes (see
	// runBundleFloor), BundleFloorRatio the converge's time over it: what
	// limbo adds of its own. No goal: issue 15's is against the raw floor.
	BundleFloorSeconds float64 `json:"bundleFloorSeconds,omitempty"`
	BundleFloorRatio   float64 `json:"bundleFloorRatio,omitempty"`
	BundleFloorCPU     *CPUUse `json:"bundleFloorCPU,omitempty"`
	// Requests the controller sent while converging, by HTTP method (its client's
	// own count), and the CPU it used.
	ControllerRequests   map[string]float64 `json:"controllerRequests"`
	ControllerCPUSeconds float64            `json:"controllerCPUSeconds"`
	// HeapMiB and RSSMiB are the controller's memory once converged.
	HeapMiB float64 `json:"heapMiB"`
	RSSMiB  float64 `json:"rssMiB"`
	// The CPU the API server used in the floor's run and in the converge (the
	// Bundles' creation included, as in the timing): on a machine the control
	// plane shares, the converge ratio cannot beat their ratio by much.
	FloorAPIServerCPUSeconds float64 `json:"floorAPIServerCPUSeconds"`
	APIServerCPUSeconds      float64 `json:"apiServerCPUSeconds"`
	// FloorCPU and CPU are the CPU the whole machine used in the floor's run and
	// in the converge, and how much of it each process took.
	FloorCPU *CPUUse `json:"floorCPU,omitempty"`
	CPU      *CPUUse `json:"cpu,omitempty"`
}

// Peer is the unthrottled workload converged by a peer controller (kro) on the
// same control plane, with the same client settings and workers.
type Peer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Instances are the peer's objects standing for Bundles, each of
	// Objects/Instances ConfigMaps.
	Instances int `json:"instances"`
	Objects   int `json:"objects"`
	// Seconds is from the first instance created to the last instance converged
	// (ACTIVE, its objects seen); RatioToFloor is Seconds over the unthrottled
	// floor, LimboSpeedup Seconds over limbo's unthrottled converge (> 1: limbo
	// is faster).
	Seconds      float64 `json:"seconds"`
	RatioToFloor float64 `json:"ratioToFloor"`
	LimboSpeedup float64 `json:"limboSpeedup"`
	// Flags are the peer's command-line flags besides addresses and kubeconfig.
	Flags []string `json:"flags"`
	// Requests the peer sent while converging, by method, the CPU it used, and
	// its memory once converged (no heap figure: a release build of kro serves
	// no pprof to force a GC).
	Requests   map[string]float64 `json:"requests"`
	CPUSeconds float64            `json:"cpuSeconds"`
	RSSMiB     float64            `json:"rssMiB"`
	PeakRSSMiB float64            `json:"peakRSSMiB"`
	// CPU is the CPU the whole machine used in the peer's converge, and how much
	// of it each process took.
	CPU *CPUUse `json:"cpu,omitempty"`
}

// NoOp is the API server's cost of reconciling every Bundle with nothing to do.
type NoOp struct {
	Bundles         int     `json:"bundles"`
	Reconciles      float64 `json:"reconciles"`
	WindowSeconds   float64 `json:"windowSeconds"`
	Writes          float64 `json:"writes"`
	Reads           float64 `json:"reads"`
	Watches         float64 `json:"watches"`
	WritesPerBundle float64 `json:"writesPerBundle"`
	ReadsPerBundle  float64 `json:"readsPerBundle"`
	Goal            float64 `json:"goalWritesPerBundle"`
	Met             bool    `json:"met"`
	// ByRequest is the API server's count during the window by "VERB resource",
	// the trigger's own writes taken out.
	ByRequest map[string]float64 `json:"byRequest"`
	// TriggerWrites are the benchmark's own writes in the window (taken out).
	TriggerWrites int `json:"triggerWrites"`
	// Background is what the API server served in an idle window of the same
	// filter just before (should be empty).
	Background map[string]float64 `json:"background"`
	// ControllerRequests is the controller client's own count, by method.
	ControllerRequests map[string]float64 `json:"controllerRequests"`
	Note               string             `json:"note"`
}

// Lateness is actual deletion time (the watch event) minus deadline.
type Lateness struct {
	Objects    int     `json:"objects"`
	P50        float64 `json:"p50Seconds"`
	P99        float64 `json:"p99Seconds"`
	Max        float64 `json:"maxSeconds"`
	Min        float64 `json:"minSeconds"`
	Goal       float64 `json:"goalP99Seconds"`
	Met        bool    `json:"met"`
	Unobserved int     `json:"unobservedDeadlines"`
	// ControllerMean is the mean of limbo_deletion_lateness_seconds over the
	// phase: the controller's own view (delete call returned minus deadline).
	ControllerMean float64 `json:"controllerMeanSeconds"`
	// QueueWaitMean and ReconcileMean are the Bundle controller's mean wait in
	// its work queue and mean reconcile time during the phase.
	QueueWaitMean float64 `json:"queueWaitMeanSeconds"`
	ReconcileMean float64 `json:"reconcileMeanSeconds"`
	// ControllerRequests are the controller's requests during the phase, by
	// method.
	ControllerRequests map[string]float64 `json:"controllerRequests,omitempty"`
	// Samples are the objects, soonest deadline first.
	Samples []LatenessSample `json:"samples"`
}

// LatenessSample is one deleted object.
type LatenessSample struct {
	Name     string    `json:"name"`
	Deadline time.Time `json:"deadline"`
	Lateness float64   `json:"latenessSeconds"`
}

// Memory is the controller's memory after converging the memory workload.
type Memory struct {
	Bundles      int     `json:"bundles"`
	Objects      int     `json:"objects"`
	HeapMiB      float64 `json:"heapMiB"`
	HeapInuseMiB float64 `json:"heapInuseMiB"`
	// RSSMiB is the steady RSS: read once the runtime has returned the heap the
	// converge freed (SettleSeconds after RSSAfterGCMiB, see settle).
	RSSMiB        float64 `json:"rssMiB"`
	RSSAfterGCMiB float64 `json:"rssAfterGCMiB"`
	SettleSeconds float64 `json:"settleSeconds"`
	PeakRSSMiB    float64 `json:"peakRSSMiB"`
	// FileRSSMiB is the part of the steady RSS that is the binary's file pages.
	FileRSSMiB float64 `json:"fileRSSMiB"`
	// What the RSS is made of, from the Go runtime: the heap's spans in use,
	// the heap's free spans not yet returned to the OS, and everything the
	// runtime holds (heap, stacks, its own metadata); the rest of the RSS is the
	// binary's code and data.
	HeapIdleNotReleasedMiB float64 `json:"heapIdleNotReleasedMiB"`
	GoSysMiB               float64 `json:"goSysMiB"`
	// StartRSSMiB and StartHeapMiB are the controller's figures right after it
	// started, before any Bundle.
	StartRSSMiB    float64 `json:"startRSSMiB"`
	StartHeapMiB   float64 `json:"startHeapMiB"`
	Goal           float64 `json:"goalMiB"`
	PeakGoal       float64 `json:"peakGoalMiB"`
	Met            bool    `json:"met"`
	ConvergeSecond float64 `json:"convergeSeconds"`
	// ControllerCPUSeconds is the CPU the controller used in the phase.
	ControllerCPUSeconds float64 `json:"controllerCPUSeconds"`
	Skipped              string  `json:"skipped,omitempty"`
}

// WriteJSON writes the results to path.
func (r *Results) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Print writes the results as a table.
func (r *Results) Print(w io.Writer) {
	s := r.Settings
	fmt.Fprintf(w, "\nlimbo benchmark — %d CPUs, %s, load average %s at start, %s at end\n", r.Host.CPUs, r.Host.GoVersion, r.Host.LoadAtStart, r.Host.LoadAtEnd)
	fmt.Fprintf(w, "controller: %s (repository at %s)\n", r.Host.Controller, orDefault(r.Host.Revision, "unknown revision"))
	fmt.Fprintf(w, "workload: %s; --workers=%d (limbo and kro), the same concurrency for the floor client\n", r.workloadLine(), s.Workers)
	if len(s.ControllerArgs)+len(s.ControllerEnv) > 0 {
		fmt.Fprintf(w, "controller extras: args %v, environment %v\n", s.ControllerArgs, s.ControllerEnv)
	}
	fmt.Fprintln(w)
	if r.Shards != nil {
		r.Shards.print(w)
		r.printPhases(w)
		return
	}
	fmt.Fprintln(w, r.Headline())
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tGOAL\tMET")
	c := r.Converge
	convergeRows(tw, c)
	if u := r.Unthrottled; u != nil {
		convergeRows(tw, *u)
		if k := r.Kro; k != nil {
			fmt.Fprintf(tw, "converge %s: %s %s (%d instances)\t%.1fs\t\t\n", u.Lane, k.Name, k.Version, k.Instances, k.Seconds)
			fmt.Fprintf(tw, "converge %s: ratio %s/floor\t%.2f×\t\t\n", u.Lane, k.Name, k.RatioToFloor)
			fmt.Fprintf(tw, "converge %s: %s time / limbo time\t%.2f×\t> 1×\t%s\n", u.Lane, k.Name, k.LimboSpeedup, yes(k.LimboSpeedup > 1))
		}
	}
	if n := r.NoOp; n != nil {
		fmt.Fprintf(tw, "no-op reconcile: writes per Bundle\t%.2f\t%g\t%s\n", n.WritesPerBundle, n.Goal, yes(n.Met))
		fmt.Fprintf(tw, "no-op reconcile: reads per Bundle\t%.2f\t\t\n", n.ReadsPerBundle)
	}
	if l := r.Lateness; l != nil {
		fmt.Fprintf(tw, "deletion lateness (%d objects): p50\t%.3fs\t\t\n", l.Objects, l.P50)
		fmt.Fprintf(tw, "deletion lateness: p99\t%.3fs\t≤ %gs\t%s\n", l.P99, l.Goal, yes(l.Met))
		fmt.Fprintf(tw, "deletion lateness: max\t%.3fs\t\t\n", l.Max)
	}
	if m := r.Memory; m != nil && m.Skipped == "" {
		fmt.Fprintf(tw, "memory at %d objects: heap (live, after GC)\t%.1f MiB\t\t\n", m.Objects, m.HeapMiB)
		// Each figure against its own goal (m.Met is both together).
		met := func(ok bool) string {
			if m.Objects < goalMemoryObjects {
				return fmt.Sprintf("n/a (goal is at %d objects)", goalMemoryObjects)
			}
			return yes(ok)
		}
		fmt.Fprintf(tw, "memory: RSS (steady)\t%.1f MiB\t≤ %g MiB\t%s\n", m.RSSMiB, m.Goal, met(m.RSSMiB <= m.Goal))
		fmt.Fprintf(tw, "memory: peak RSS\t%.1f MiB\t≤ %g MiB\t%s\n", m.PeakRSSMiB, m.PeakGoal, met(m.PeakRSSMiB <= m.PeakGoal))
	} else if m != nil {
		fmt.Fprintf(tw, "memory\tskipped: %s\t\t\n", m.Skipped)
	}
	tw.Flush()

	fmt.Fprintf(w, "\ndetails:\n")
	for _, c := range r.converges() {
		fmt.Fprintf(w, "  converge %s: limbo sent %s, used %.1fs CPU; heap %.1f MiB, RSS %.1f MiB at %d objects\n",
			c.Lane, formatCounts(c.ControllerRequests), c.ControllerCPUSeconds, c.HeapMiB, c.RSSMiB, c.Objects)
		fmt.Fprintf(w, "  converge %s: the API server used %.1fs CPU for the floor, %.1fs for limbo's converge (%s)\n",
			c.Lane, c.FloorAPIServerCPUSeconds, c.APIServerCPUSeconds, cpuRatio(c.APIServerCPUSeconds, c.FloorAPIServerCPUSeconds))
		if c.FloorCPU != nil && c.CPU != nil {
			fmt.Fprintf(w, "  converge %s: the machine used %.1fs CPU for the floor (%.2f cores busy), %.1fs for limbo's converge (%.2f cores busy, %s); by process, floor/converge: %s\n",
				c.Lane, c.FloorCPU.Seconds, c.FloorCPU.BusyCores, c.CPU.Seconds, c.CPU.BusyCores, cpuRatio(c.CPU.Seconds, c.FloorCPU.Seconds), formatCPUByProcess(c.FloorCPU, c.CPU))
		}
		if c.BundleFloorCPU != nil && c.CPU != nil {
			fmt.Fprintf(w, "  converge %s: the machine used %.1fs CPU for the floor with the Bundles' writes (%.2f cores busy; limbo's converge %s of it); by process, that floor/converge: %s\n",
				c.Lane, c.BundleFloorCPU.Seconds, c.BundleFloorCPU.BusyCores, cpuRatio(c.CPU.Seconds, c.BundleFloorCPU.Seconds), formatCPUByProcess(c.BundleFloorCPU, c.CPU))
		}
	}
	if k := r.Kro; k != nil {
		fmt.Fprintf(w, "  converge %s: %s sent %s, used %.1fs CPU; RSS %.1f MiB (peak %.1f MiB) at %d objects; flags %s\n",
			laneUnthrottled, k.Name, formatCounts(k.Requests), k.CPUSeconds, k.RSSMiB, k.PeakRSSMiB, k.Objects, strings.Join(k.Flags, " "))
		if u := r.Unthrottled; u != nil && u.FloorCPU != nil && k.CPU != nil {
			fmt.Fprintf(w, "  converge %s: the machine used %.1fs CPU for %s's converge (%.2f cores busy, %s the floor's); by process, floor/%s: %s\n",
				laneUnthrottled, k.CPU.Seconds, k.Name, k.CPU.BusyCores, cpuRatio(k.CPU.Seconds, u.FloorCPU.Seconds), k.Name, formatCPUByProcess(u.FloorCPU, k.CPU))
		}
	}
	if n := r.NoOp; n != nil {
		fmt.Fprintf(w, "  no-op: %d Bundles, %.0f reconciles in %.1fs; API server saw %s (trigger's %d PATCHes taken out)\n",
			n.Bundles, n.Reconciles, n.WindowSeconds, formatCounts(n.ByRequest), n.TriggerWrites)
		fmt.Fprintf(w, "  no-op: controller client sent %s; background in an idle window: %s\n", formatCounts(n.ControllerRequests), formatCounts(n.Background))
	}
	if l := r.Lateness; l != nil {
		fmt.Fprintf(w, "  deletion: min %.3fs; controller's own limbo_deletion_lateness_seconds mean %.3fs; deadlines not seen: %d\n", l.Min, l.ControllerMean, l.Unobserved)
		fmt.Fprintf(w, "  deletion: Bundle work queue wait mean %.3fs, reconcile mean %.3fs; controller sent %s\n", l.QueueWaitMean, l.ReconcileMean, formatCounts(l.ControllerRequests))
	}
	if m := r.Memory; m != nil && m.Skipped == "" {
		fmt.Fprintf(w, "  memory: %d Bundles converged in %.1fs, controller used %.1fs CPU\n", m.Bundles, m.ConvergeSecond, m.ControllerCPUSeconds)
		fmt.Fprintf(w, "  memory: heap in use %.1f MiB, heap free but not returned %.1f MiB, Go runtime total %.1f MiB; at start: heap %.1f MiB, RSS %.1f MiB\n",
			m.HeapInuseMiB, m.HeapIdleNotReleasedMiB, m.GoSysMiB, m.StartHeapMiB, m.StartRSSMiB)
		fmt.Fprintf(w, "  memory: RSS %.1f MiB right after the converge's garbage collection, steady %.1fs later; of the steady RSS, %.1f MiB are the binary's file pages\n",
			m.RSSAfterGCMiB, m.SettleSeconds, m.FileRSSMiB)
	}
	r.printPhases(w)
}

// printPhases writes the wall time of each phase.
func (r *Results) printPhases(w io.Writer) {
	var phases []string
	for _, k := range phaseOrder {
		if v, ok := r.PhaseSeconds[k]; ok {
			phases = append(phases, fmt.Sprintf("%s %.0fs", k, v))
		}
	}
	fmt.Fprintf(w, "  time: %s; total %.0fs\n", strings.Join(phases, ", "), r.TotalSeconds)
}

// print writes the shard comparison as two tables, the converge and the
// restart after it: one line per controller.
func (s *Shards) print(w io.Writer) {
	fmt.Fprintf(w, "shards: converge %d Bundles × %d ConfigMaps (%d objects)\n\n", s.Bundles, s.Objects, s.Bundles*s.Objects)
	s.printRows(w, "SHARDS\tCONVERGE\tCONTROLLER\tCPU\tHEAP\tRSS\tPEAK RSS\tREQUESTS", func(run ShardRun) float64 { return run.ConvergeSeconds },
		func(c ShardController) string {
			return fmt.Sprintf("%.1fs\t%.1f MiB\t%.1f MiB\t%.1f MiB\t%s", c.CPUSeconds, c.HeapMiB, c.RSSMiB, c.PeakRSSMiB, formatCounts(c.Requests))
		})
	fmt.Fprintf(w, "\nafter a restart of every controller, until idle\n\n")
	s.printRows(w, "SHARDS\tIDLE AFTER\tCONTROLLER\tCPU\tREQUESTS", func(run ShardRun) float64 { return run.RestartSeconds },
		func(c ShardController) string {
			return fmt.Sprintf("%.1fs\t%s", c.RestartCPUSeconds, formatCounts(c.RestartRequests))
		})
	fmt.Fprintf(w, "\n  note: %s\n", s.Note)
}

// printRows writes a table of header: one row per controller of every run,
// with the run's shards, its figure in seconds (on its first controller's row
// only), the controller's selector, and the rest of the row.
func (s *Shards) printRows(w io.Writer, header string, figure func(ShardRun) float64, rest func(ShardController) string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, run := range s.Runs {
		for k, c := range run.Controllers {
			shown := ""
			if k == 0 {
				shown = fmt.Sprintf("%.1fs", figure(run))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", run.Shards, shown, orDefault(c.Selector, "(every Bundle)"), rest(c))
		}
	}
	tw.Flush()
}

var phaseOrder = []string{"setup", "converge", "converge-unthrottled", "kro", "noop", "deletion", "memory", "shards"}

// workloadLine names the preset (when the workload is one) and the sizes.
func (r *Results) workloadLine() string {
	s := r.Settings
	line := fmt.Sprintf("%d Bundles × %d ConfigMaps", s.Bundles, s.ObjectsPerBundle)
	for _, p := range Presets {
		if p.Name == s.Preset && p.Bundles == s.Bundles && p.Objects == s.ObjectsPerBundle {
			return fmt.Sprintf("preset %s, %s", p.Name, line)
		}
	}
	return line
}

// converges are the converge lanes that ran, throttled first.
func (r *Results) converges() []Converge {
	out := []Converge{r.Converge}
	if r.Unthrottled != nil {
		out = append(out, *r.Unthrottled)
	}
	return out
}

// Headline is the result docs/performance.md leads with: the unthrottled
// converge's ratio to the raw-apply floor (the throttled one when the
// unthrottled lane was skipped, saying so), and kro's time beside limbo's when
// it ran.
func (r *Results) Headline() string {
	c, note := r.Converge, " (the unthrottled converge was skipped: this ratio measures the client's rate limiter as much as limbo)"
	if r.Unthrottled != nil {
		c, note = *r.Unthrottled, ""
	}
	line := fmt.Sprintf("headline: converge %d objects at QPS %g, burst %d: limbo %.2f× the raw-apply floor (%.1fs vs %.1fs; goal ≤ %.1f×: %s)%s",
		c.Objects, c.QPS, c.Burst, c.Ratio, c.ControllerSeconds, c.FloorSeconds, c.Goal, yes(c.Met), note)
	if c.BundleFloorSeconds > 0 {
		line += fmt.Sprintf("\n          the Bundles' own writes without a controller: %.1fs, %.2f× the raw-apply floor; limbo %.2f× that",
			c.BundleFloorSeconds, c.BundleFloorSeconds/c.FloorSeconds, c.BundleFloorRatio)
	}
	if k := r.Kro; k != nil {
		line += fmt.Sprintf("\n          %s %s on the same work: %.1fs, %.2f× the floor; limbo is %.2f× as fast", k.Name, k.Version, k.Seconds, k.RatioToFloor, k.LimboSpeedup)
	}
	return line
}

// convergeRows writes a converge lane's floor, limbo and ratio.
func convergeRows(tw io.Writer, c Converge) {
	fmt.Fprintf(tw, "converge %s (QPS %g, burst %d), %d objects: floor\t%.1fs\t\t\n", c.Lane, c.QPS, c.Burst, c.Objects, c.FloorSeconds)
	fmt.Fprintf(tw, "converge %s: limbo\t%.1fs\t\t\n", c.Lane, c.ControllerSeconds)
	fmt.Fprintf(tw, "converge %s: ratio limbo/floor\t%.2f×\t≤ %.1f×\t%s\n", c.Lane, c.Ratio, c.Goal, yes(c.Met))
	if c.BundleFloorSeconds > 0 {
		fmt.Fprintf(tw, "converge %s: floor with the Bundles' own writes\t%.1fs\t\t\n", c.Lane, c.BundleFloorSeconds)
		fmt.Fprintf(tw, "converge %s: ratio limbo/that floor (limbo's own part)\t%.2f×\t\t\n", c.Lane, c.BundleFloorRatio)
	}
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func formatCounts(m map[string]float64) string {
	if len(m) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// percentile is the nearest-rank percentile q (0 < q ≤ 1) of sorted values.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func sortedCopy(v []float64) []float64 {
	out := append([]float64(nil), v...)
	sort.Float64s(out)
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cpuRatio is a / b as "1.23×", or "n/a" without b.
func cpuRatio(a, b float64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
