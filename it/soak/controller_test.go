package soak

import (
	"context"
	"fmt"
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

// buildBinaries builds cmd/limbo and cmd/kubectl-limbo of the repository at
// root into dir.
func buildBinaries(root, dir string) (limbo, kubectlLimbo string, err error) {
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/limbo", "./cmd/kubectl-limbo")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return filepath.Join(dir, "limbo"), filepath.Join(dir, "kubectl-limbo"), nil
}

// controllerProcess runs `limbo controller` as a child process, so that it can
// be killed with SIGKILL, as a crashed or evicted Pod is, and started again.
type controllerProcess struct {
	bin        string
	kubeconfig string
	logPath    string
	args       []string
	cmd        *exec.Cmd
	done       chan struct{}
	probeAddr  string
}

func newControllerProcess(bin, kubeconfig, logPath string) (*controllerProcess, error) {
	args := []string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--zap-log-level", "info"}
	// A controller killed with SIGKILL does not release its Lease: with leader
	// election, the next one would wait for the Lease to expire. One replica
	// needs none.
	help, err := exec.Command(bin, "controller", "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s controller --help: %v: %s", bin, err, help)
	}
	if strings.Contains(string(help), "--leader-elect") {
		args = append(args, "--leader-elect=false")
	}
	return &controllerProcess{bin: bin, kubeconfig: kubeconfig, logPath: logPath, args: args}, nil
}

// start starts the controller and waits until its /readyz answers (its caches
// are synced).
func (c *controllerProcess) start(ctx context.Context) error {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return err
	}
	c.probeAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "=== soak: controller started at %s\n", time.Now().Format(time.RFC3339Nano))
	c.cmd = exec.Command(c.bin, append(c.args, "--health-probe-bind-address", c.probeAddr)...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	done := make(chan struct{})
	c.done = done
	go func() {
		_ = c.cmd.Wait()
		logFile.Close()
		close(done)
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	return pollErr(ctx, 2*time.Minute, func() error {
		select {
		case <-done:
			return fmt.Errorf("limbo controller exited: %v (log: %s)", c.cmd.ProcessState, c.logPath)
		default:
		}
		resp, err := client.Get("http://" + c.probeAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
}

// kill sends SIGKILL and waits for the process to end.
func (c *controllerProcess) kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// running reports whether the controller process is alive.
func (c *controllerProcess) running() bool {
	if c.done == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}
