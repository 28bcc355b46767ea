package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestHeadline(t *testing.T) {
	throttled := Converge{Lane: laneThrottled, QPS: 50, Burst: 100, Objects: 2000, FloorSeconds: 40, ControllerSeconds: 41, Ratio: 1.025, Goal: GoalConvergeRatio, Met: true}
	unthrottled := Converge{Lane: laneUnthrottled, QPS: 1000, Burst: 2000, Objects: 2000, FloorSeconds: 2.7, ControllerSeconds: 10.3, Ratio: 3.815, Goal: GoalConvergeRatio}
	withBundleFloor := unthrottled
	withBundleFloor.BundleFloorSeconds, withBundleFloor.BundleFloorRatio = 5.4, 1.907
	kro := &Peer{Name: kroName, Version: "v0.9.4", Instances: 200, Objects: 2000, Seconds: 13.7, RatioToFloor: 5.074, LimboSpeedup: 1.33}
	for _, c := range []struct {
		name string
		res  Results
		want []string
		not  []string
	}{
		{
			name: "unthrottled is the headline",
			res:  Results{Converge: throttled, Unthrottled: &unthrottled},
			want: []string{"converge 2000 objects at QPS 1000, burst 2000: limbo 3.81× the raw-apply floor (10.3s vs 2.7s; goal ≤ 1.3×: NO)"},
			not:  []string{"skipped", "kro", "own writes"},
		},
		{
			name: "the floor with the Bundles' own writes beside it",
			res:  Results{Converge: throttled, Unthrottled: &withBundleFloor},
			want: []string{"limbo 3.81× the raw-apply floor", "the Bundles' own writes without a controller: 5.4s, 2.00× the raw-apply floor; limbo 1.91× that"},
		},
		{
			name: "throttled when the unthrottled lane was skipped, saying so",
			res:  Results{Converge: throttled},
			want: []string{"at QPS 50, burst 100: limbo 1.02× the raw-apply floor", "goal ≤ 1.3×: yes", "the unthrottled converge was skipped"},
		},
		{
			name: "kro beside limbo",
			res:  Results{Converge: throttled, Unthrottled: &unthrottled, Kro: kro},
			want: []string{"limbo 3.81×", "kro v0.9.4 on the same work: 13.7s, 5.07× the floor; limbo is 1.33× as fast"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.res.Headline()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("headline %q lacks %q", got, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("headline %q has %q", got, n)
				}
			}
		})
	}
}

func TestPrintConvergeLanes(t *testing.T) {
	res := &Results{
		Settings: Settings{Preset: "large", Bundles: 1000, ObjectsPerBundle: 10, Workers: 4},
		Converge: Converge{Lane: laneThrottled, QPS: 50, Burst: 100, Objects: 10000, FloorSeconds: 200, ControllerSeconds: 210, Ratio: 1.05, Goal: 1.3, Met: true},
		Unthrottled: &Converge{Lane: laneUnthrottled, QPS: 1000, Burst: 2000, Objects: 10000, FloorSeconds: 14, ControllerSeconds: 16, Ratio: 1.143, Goal: 1.3, Met: true,
			FloorAPIServerCPUSeconds: 10, APIServerCPUSeconds: 22, BundleFloorSeconds: 12.5, BundleFloorRatio: 1.28},
		Kro:          &Peer{Name: kroName, Version: "v0.9.4", Instances: 1000, Objects: 10000, Seconds: 60, RatioToFloor: 4.286, LimboSpeedup: 3.75, Flags: []string{"--client-qps=1000"}},
		PhaseSeconds: map[string]float64{"setup": 10, "converge": 250, "converge-unthrottled": 40, "kro": 70},
	}
	out := wantPrinted(t, res, []printed{
		{"the preset", "workload: preset large, 1000 Bundles × 10 ConfigMaps"},
		{"the headline before the table", "headline: converge 10000 objects at QPS 1000"},
		{"the throttled floor", "converge throttled (QPS 50, burst 100), 10000 objects: floor"},
		{"the unthrottled ratio with its goal", "converge unthrottled: ratio limbo/floor"},
		{"the floor with the Bundles' own writes", "converge unthrottled: floor with the Bundles' own writes"},
		{"limbo's own part", "converge unthrottled: ratio limbo/that floor (limbo's own part)"},
		{"kro's time", "converge unthrottled: kro v0.9.4 (1000 instances)"},
		{"kro against limbo", "converge unthrottled: kro time / limbo time"},
		{"kro's flags in the details", "flags --client-qps=1000"},
		{"the API server's CPU of both runs", "converge unthrottled: the API server used 10.0s CPU for the floor, 22.0s for limbo's converge (2.20×)"},
		{"the phases in order", "time: setup 10s, converge 250s, converge-unthrottled 40s, kro 70s"},
	})
	if strings.Index(out, "headline:") > strings.Index(out, "FIGURE") {
		t.Errorf("the headline comes after the table:\n%s", out)
	}
	for label, value := range map[string]string{"own writes": "12.5s", "own part": "1.28×"} {
		for line := range strings.Lines(out) {
			if strings.Contains(line, label) && !strings.Contains(line, value) {
				t.Errorf("the row of %q does not show %s: %q", label, value, line)
			}
		}
	}
}

func TestWorkloadLine(t *testing.T) {
	for _, c := range []struct {
		settings Settings
		want     string
	}{
		{Settings{Preset: "default", Bundles: 200, ObjectsPerBundle: 10}, "preset default, 200 Bundles × 10 ConfigMaps"},
		// Flags that override the preset's sizes: no preset named.
		{Settings{Preset: "default", Bundles: 50, ObjectsPerBundle: 10}, "50 Bundles × 10 ConfigMaps"},
		{Settings{Bundles: 1000, ObjectsPerBundle: 10}, "1000 Bundles × 10 ConfigMaps"},
	} {
		if got := (&Results{Settings: c.settings}).workloadLine(); got != c.want {
			t.Errorf("workloadLine(%+v) = %q, want %q", c.settings, got, c.want)
		}
	}
}

func TestPrintMemory(t *testing.T) {
	res := &Results{Memory: &Memory{Bundles: 1000, Objects: 10000, HeapMiB: 36.6, RSSMiB: 123.3, RSSAfterGCMiB: 138.3, SettleSeconds: 12.1,
		PeakRSSMiB: 143.6, FileRSSMiB: 33.8, Goal: GoalMemoryMiB, PeakGoal: GoalPeakMemoryMiB}}
	out := wantPrinted(t, res, []printed{
		{"the steady RSS against its goal", "memory: RSS (steady)"},
		{"the steady RSS's value", "123.3 MiB"},
		{"the RSS before settling, the wait and the binary's part",
			"memory: RSS 138.3 MiB right after the converge's garbage collection, steady 12.1s later; of the steady RSS, 33.8 MiB are the binary's file pages"},
	})
	// Each figure is judged against its own goal: a peak within its goal is met
	// although the steady RSS is not.
	for row, want := range map[string]string{"memory: RSS (steady)": "NO", "memory: peak RSS": "yes"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, row) {
				found = true
				if fields := strings.Fields(line); fields[len(fields)-1] != want {
					t.Errorf("row %q: %q, want it to end with %s", row, line, want)
				}
			}
		}
		if !found {
			t.Errorf("no row %q in:\n%s", row, out)
		}
	}
}

// printed is a line Print must write: what it is, and the text.
type printed struct{ what, want string }

// wantPrinted checks that res.Print writes every one of wants, and returns what
// it wrote.
func wantPrinted(t *testing.T, res *Results, wants []printed) string {
	t.Helper()
	var buf bytes.Buffer
	res.Print(&buf)
	out := buf.String()
	for _, c := range wants {
		if !strings.Contains(out, c.want) {
			t.Errorf("Print lacks %s (%q):\n%s", c.what, c.want, out)
		}
	}
	return out
}

func TestPrintShards(t *testing.T) {
	res := &Results{Shards: &Shards{Bundles: 1000, Objects: 10, Runs: []ShardRun{
		{Shards: 1, ConvergeSeconds: 206.3, RestartSeconds: 40.2, Controllers: []ShardController{
			{CPUSeconds: 67.3, Requests: map[string]float64{"GET": 10019}, RestartCPUSeconds: 12.5, RestartRequests: map[string]float64{"GET": 1010}}}},
		{Shards: 2, ConvergeSeconds: 106.6, RestartSeconds: 25.7, Controllers: []ShardController{
			{Selector: "limbo.dev/shard=0", CPUSeconds: 22.1, RestartCPUSeconds: 7.5, RestartRequests: map[string]float64{"GET": 1005}},
			{Selector: "limbo.dev/shard=1", CPUSeconds: 22.5, RestartCPUSeconds: 7.4, RestartRequests: map[string]float64{"GET": 1004}}}},
	}}}
	wantPrinted(t, res, []printed{
		{"the converge of one controller", "1       206.3s    (every Bundle)"},
		{"the restart table", "after a restart of every controller, until idle"},
		{"one controller's restart", "1       40.2s       (every Bundle)     12.5s  {GET=1010}"},
		{"the first shard's restart", "2       25.7s       limbo.dev/shard=0  7.5s   {GET=1005}"},
		{"the second shard's restart, its time on the first line only", "2                   limbo.dev/shard=1  7.4s   {GET=1004}"},
	})
}
