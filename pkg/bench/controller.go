package bench

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

// controllerProcess is `limbo controller` running as a child process, so that its
// /metrics (heap, RSS, CPU, client requests) describe the controller alone.
type controllerProcess struct {
	cmd         *exec.Cmd
	done        chan error
	metricsAddr string
	probeAddr   string
	pprofAddr   string
	logPath     string
	http        *http.Client
}

// buildLimbo builds cmd/limbo of the repository at root into dir.
func buildLimbo(ctx context.Context, root, dir string) (string, error) {
	out := filepath.Join(dir, "limbo")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/limbo")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/limbo: %w", err)
	}
	return out, nil
}

// startController runs `limbo controller` against kubeconfig and waits until it is
// ready (its informers synced).
func startController(ctx context.Context, bin, kubeconfig, logDir string, cfg Config) (*controllerProcess, error) {
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	p := &controllerProcess{
		metricsAddr: "127.0.0.1:" + strconv.Itoa(ports[0]),
		probeAddr:   "127.0.0.1:" + strconv.Itoa(ports[1]),
		pprofAddr:   "127.0.0.1:" + strconv.Itoa(ports[2]),
		logPath:     filepath.Join(logDir, "limbo-controller.log"),
		http:        &http.Client{Timeout: 2 * time.Minute},
		done:        make(chan error, 1),
	}
	args := []string{"controller",
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", p.metricsAddr,
		"--health-probe-bind-address", p.probeAddr,
		"--pprof-bind-address", p.pprofAddr,
		"--kube-api-qps", strconv.FormatFloat(float64(cfg.QPS), 'f', -1, 32),
		"--kube-api-burst", strconv.Itoa(cfg.Burst),
		"--workers", strconv.Itoa(cfg.Workers),
		"--leader-elect=false",
		"--zap-log-level", cfg.ControllerLogLevel,
	}
	args = append(args, cfg.ControllerArgs...)
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = append(os.Environ(), cfg.ControllerEnv...)
	// The controller dies with the benchmark, even if the benchmark is killed.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.done <- p.cmd.Wait()
		logFile.Close()
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return nil, fmt.Errorf("limbo controller exited: %v (log: %s)%s", err, p.logPath, tail(p.logPath, 20))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := p.http.Get("http://" + p.probeAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("limbo controller not ready after 2m (log: %s)", p.logPath)
		}
	}
}

// alive fails when the controller has exited.
func (p *controllerProcess) alive() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("limbo controller exited: %v (log: %s)%s", err, p.logPath, tail(p.logPath, 20))
	default:
		return nil
	}
}

// stop sends SIGTERM and, after a grace period, SIGKILL.
func (p *controllerProcess) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
	}
}

// metrics scrapes the controller's /metrics.
func (p *controllerProcess) metrics(ctx context.Context) (Samples, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	body, err := p.get(ctx, "http://"+p.metricsAddr+"/metrics")
	if err != nil {
		return nil, err
	}
	return ParseMetrics(string(body))
}

func (p *controllerProcess) get(ctx context.Context, url string) ([]byte, error) {
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

// profile fetches /debug/pprof/<name>?<query> and writes it to path.
func (p *controllerProcess) profile(ctx context.Context, name, query, path string) error {
	body, err := p.get(ctx, "http://"+p.pprofAddr+"/debug/pprof/"+name+"?"+query)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

// peakRSS is the controller's peak resident set size (VmHWM), in bytes.
func (p *controllerProcess) peakRSS() (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				kb, err := strconv.ParseFloat(fields[0], 64)
				return kb * 1024, err
			}
		}
	}
	return 0, errors.New("no VmHWM in /proc/<pid>/status")
}

func tail(path string, lines int) string {
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
