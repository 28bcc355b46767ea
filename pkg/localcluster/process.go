package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one control-plane binary running as a child of this process.
type process struct {
	name string
	// bin, args and logPath are what the process was started with, so that it can
	// be started again the same way.
	bin     string
	args    []string
	logPath string
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	err     error // set before done is closed
}

// startProcess starts bin with args, logging to logPath. The child gets SIGKILL when
// this process dies, however it dies, and runs in its own process group so that a
// terminal's Ctrl-C reaches only us: we then stop the children in order.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, bin: bin, args: args, logPath: logPath, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("%s exited: %v (log: %s)", p.name, p.err, p.log.Name())
	default:
		return false, nil
	}
}

// stop sends SIGTERM and waits for the process to end, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	if ok, _ := p.exited(); ok {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}
