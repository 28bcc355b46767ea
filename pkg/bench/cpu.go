package bench

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// clockTicksPerSecond is USER_HZ, the unit of /proc's CPU times: 100 on every
// Linux architecture the benchmark runs on (the kernel exports it to user space
// as a constant, whatever its internal tick rate).
const clockTicksPerSecond = 100

// Process names of a CPU reading besides the control plane's components.
const (
	processBench      = "limbo-bench"
	processController = "limbo"
)

// cpuReading is the CPU time the machine and the benchmark's processes have
// used so far, from /proc: on a machine the control plane shares with the
// controller and the benchmark, a converge is only as fast as the CPU every
// process needs, so a run's CPU by process says where its time went.
type cpuReading struct {
	busy, idle float64 // seconds, summed over all CPUs
	cpus       int
	byProcess  map[string]float64 // seconds of user and system time
}

// CPUUse is the CPU a timed run used: on the whole machine, and by process.
type CPUUse struct {
	Seconds float64 `json:"seconds"`
	// BusyCores is the machine's mean number of busy CPUs over the run.
	BusyCores float64            `json:"busyCores"`
	ByProcess map[string]float64 `json:"byProcess"`
}

// readCPU reads the machine's CPU time and that of pids (name → process id). A
// process that is gone counts nothing.
func readCPU(pids map[string]int) (cpuReading, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuReading{}, err
	}
	r, err := parseMachineStat(string(stat))
	if err != nil {
		return cpuReading{}, err
	}
	for name, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return cpuReading{}, err
		}
		if r.byProcess[name], err = parseProcessStat(string(data)); err != nil {
			return cpuReading{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	return r, nil
}

// parseMachineStat reads the busy and idle time of all CPUs from /proc/stat.
func parseMachineStat(stat string) (cpuReading, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuReading{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks [8]float64 // user nice system idle iowait irq softirq steal
	for i := range ticks {
		var err error
		if ticks[i], err = strconv.ParseFloat(fields[i+1], 64); err != nil {
			return cpuReading{}, fmt.Errorf("/proc/stat: %w", err)
		}
	}
	return cpuReading{
		cpus:      strings.Count(stat, "\ncpu"),
		busy:      (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]) / clockTicksPerSecond,
		idle:      (ticks[3] + ticks[4]) / clockTicksPerSecond,
		byProcess: map[string]float64{},
	}, nil
}

// parseProcessStat reads a process's user and system time, in seconds, from its
// /proc/PID/stat.
func parseProcessStat(stat string) (float64, error) {
	// The command name, in parentheses, may hold spaces and parentheses: fields
	// are counted after its last closing parenthesis, from the third (state).
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("too few fields in %q", stat)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad utime or stime in %q", stat)
	}
	return (utime + stime) / clockTicksPerSecond, nil
}

// cpuUse is the CPU used between readings a and b.
func cpuUse(a, b cpuReading) *CPUUse {
	u := &CPUUse{Seconds: round1(b.busy - a.busy), ByProcess: map[string]float64{}}
	if total := (b.busy - a.busy) + (b.idle - a.idle); total > 0 {
		u.BusyCores = round2(float64(b.cpus) * (b.busy - a.busy) / total)
	}
	for name, v := range b.byProcess {
		u.ByProcess[name] = round1(v - a.byProcess[name])
	}
	return u
}

// formatCPUByProcess lists the processes of floor and run as "name a/b", the
// control plane's first, the rest by name; one that used nothing in either is
// left out. "other" is what the machine used besides them (the kernel's work
// for no listed process, anything else running).
func formatCPUByProcess(floor, run *CPUUse) string {
	names := map[string]bool{}
	for n := range floor.ByProcess {
		names[n] = true
	}
	for n := range run.ByProcess {
		names[n] = true
	}
	order := []string{"kube-apiserver", "etcd", "kube-controller-manager"}
	var rest []string
	for n := range names {
		if !slices.Contains(order, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	var parts []string
	for _, n := range append(order, rest...) {
		if names[n] && (floor.ByProcess[n] != 0 || run.ByProcess[n] != 0) {
			parts = append(parts, fmt.Sprintf("%s %.1f/%.1f", n, floor.ByProcess[n], run.ByProcess[n]))
		}
	}
	if f, r := floor.Seconds-sumValues(floor.ByProcess), run.Seconds-sumValues(run.ByProcess); f >= 0.05 || r >= 0.05 {
		parts = append(parts, fmt.Sprintf("other %.1f/%.1f", max(f, 0), max(r, 0)))
	}
	return strings.Join(parts, ", ")
}

// sumValues is the sum of m's values.
func sumValues(m map[string]float64) float64 {
	var sum float64
	for _, v := range m {
		sum += v
	}
	return sum
}
