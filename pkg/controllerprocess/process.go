package controllerprocess

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/limbo-dev/limbo/pkg/localcluster"
)

// readyTimeout bounds the wait for a started controller's /readyz.
const readyTimeout = 2 * time.Minute

// Build builds cmd/limbo of the repository at root into dir and returns the
// binary's path.
func Build(ctx context.Context, root, dir string) (string, error) {
	return BuildCommand(ctx, root, dir, "limbo")
}

// BuildCommand builds cmd/<name> of the repository at root into dir and
// returns the binary's path.
func BuildCommand(ctx context.Context, root, dir, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w", name, err)
	}
	return out, nil
}

// Config says how to run the controller.
type Config struct {
	// Bin is the limbo binary.
	Bin        string
	Kubeconfig string
	// LogPath receives the process's stdout and stderr.
	LogPath string
	// Command are the arguments before the flags; nil: ["controller"], limbo's
	// subcommand (a peer's binary takes none: an empty, non-nil slice).
	Command []string
	// Name is the process in messages; empty: "limbo controller".
	Name string
	// Args are more arguments of the controller; the kubeconfig and the
	// metrics, probe and pprof addresses (free ports) are set by Start.
	Args []string
	// Env are more environment variables (KEY=VALUE).
	Env []string
}

// Process is `limbo controller` running as a child process. It dies with its
// parent, even if the parent is killed.
type Process struct {
	MetricsAddr, ProbeAddr, PprofAddr string
	LogPath                           string
	name                              string

	cfg  Config
	cmd  *exec.Cmd
	done chan error
	http *http.Client
}

// Start runs the controller and waits until it is ready (its informers synced;
// a replica that is not the leader is ready too).
func Start(ctx context.Context, cfg Config) (*Process, error) {
	logFile, err := os.Create(cfg.LogPath)
	if err != nil {
		return nil, err
	}
	return start(ctx, cfg, logFile)
}

// StartAgain starts a new controller with p's configuration, as a Pod's
// container is restarted after p exited or was killed (see Kill), and waits
// until it is ready. Its output is appended to p's log.
func (p *Process) StartAgain(ctx context.Context) (*Process, error) {
	if err := p.Alive(); err == nil {
		return nil, fmt.Errorf("%s is still running", p.name)
	}
	logFile, err := os.OpenFile(p.cfg.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "=== %s started again at %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	return start(ctx, p.cfg, logFile)
}

// start runs the controller with its output to logFile, which it closes when
// the process ends.
func start(ctx context.Context, cfg Config, logFile *os.File) (*Process, error) {
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	p := &Process{
		MetricsAddr: "127.0.0.1:" + strconv.Itoa(ports[0]),
		ProbeAddr:   "127.0.0.1:" + strconv.Itoa(ports[1]),
		PprofAddr:   "127.0.0.1:" + strconv.Itoa(ports[2]),
		LogPath:     cfg.LogPath,
		name:        cfg.Name,
		cfg:         cfg,
		http:        &http.Client{Timeout: 2 * time.Minute},
		done:        make(chan error, 1),
	}
	if p.name == "" {
		p.name = "limbo controller"
	}
	command := cfg.Command
	if command == nil {
		command = []string{"controller"}
	}
	args := append(append([]string{}, command...),
		"--kubeconfig", cfg.Kubeconfig,
		"--metrics-bind-address", p.MetricsAddr,
		"--health-probe-bind-address", p.ProbeAddr,
		"--pprof-bind-address", p.PprofAddr)
	args = append(args, cfg.Args...)
	p.cmd = exec.Command(cfg.Bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = append(os.Environ(), cfg.Env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.Bin, err)
	}
	go func() {
		p.done <- p.cmd.Wait()
		logFile.Close()
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return nil, fmt.Errorf("%s exited: %v (log: %s)%s", p.name, err, p.LogPath, Tail(p.LogPath, 20))
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := p.http.Get("http://" + p.ProbeAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("%s not ready after %v (log: %s)%s", p.name, readyTimeout, p.LogPath, Tail(p.LogPath, 20))
		}
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Alive fails when the controller has exited (or was killed).
func (p *Process) Alive() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited: %v (log: %s)%s", p.name, err, p.LogPath, Tail(p.LogPath, 20))
	default:
		return nil
	}
}

// Stop sends SIGTERM and, after a grace period, SIGKILL, and waits for the exit.
func (p *Process) Stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(15 * time.Second):
		_ = p.Kill()
	}
}

// Kill sends SIGKILL, as a node failure would (nothing is released, not even the
// leader election Lease), and waits until the process is gone.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	err := <-p.done
	p.done <- err
	return nil
}

// Metrics scrapes the controller's /metrics.
func (p *Process) Metrics(ctx context.Context) (Samples, error) {
	if err := p.Alive(); err != nil {
		return nil, err
	}
	body, err := p.get(ctx, "http://"+p.MetricsAddr+"/metrics")
	if err != nil {
		return nil, err
	}
	return ParseMetrics(string(body))
}

// Profile fetches /debug/pprof/<name>?<query> and writes it to path.
func (p *Process) Profile(ctx context.Context, name, query, path string) error {
	body, err := p.get(ctx, "http://"+p.PprofAddr+"/debug/pprof/"+name+"?"+query)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

func (p *Process) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// PeakRSS is the controller's peak resident set size (VmHWM), in bytes.
func (p *Process) PeakRSS() (float64, error) { return p.memoryStatus("VmHWM") }

// FileRSS is the part of the controller's resident set that is file pages
// (RssFile): the binary's code and read-only data, shared with every process
// that runs the same binary and dropped by the kernel under memory pressure.
func (p *Process) FileRSS() (float64, error) { return p.memoryStatus("RssFile") }

// memoryStatus is a memory figure of /proc/<pid>/status (given in kB), in bytes.
func (p *Process) memoryStatus(field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				kb, err := strconv.ParseFloat(fields[0], 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/<pid>/status", field)
}

// Tail returns the last lines of the file at path, indented, for error messages.
func Tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "\n  " + strings.Join(all, "\n  ")
}
