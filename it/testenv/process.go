package testenv

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// limboBinary is cmd/limbo built once per test package.
var limboBinary struct {
	once sync.Once
	path string
	err  error
	dir  string
}

// LimboBinary builds cmd/limbo once for the test package and returns its path.
func (e *Env) LimboBinary(t testing.TB) string {
	t.Helper()
	limboBinary.once.Do(func() {
		if limboBinary.dir, limboBinary.err = os.MkdirTemp("", "limbo-it-bin-"); limboBinary.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		limboBinary.path, limboBinary.err = controllerprocess.Build(ctx, e.RepoRoot, limboBinary.dir)
	})
	if limboBinary.err != nil {
		t.Fatalf("build limbo: %v", limboBinary.err)
	}
	return limboBinary.path
}

// ControllerProcess runs `limbo controller --kubeconfig <the cluster's> args...`
// as a child process until t ends, and waits until it is ready. Its log is
// printed when t fails. Use WithoutController first, so that the in-process
// controller does not act as well.
func (e *Env) ControllerProcess(t testing.TB, name string, args ...string) *controllerprocess.Process {
	t.Helper()
	bin := e.LimboBinary(t)
	logPath := filepath.Join(t.TempDir(), name+".log")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := controllerprocess.Start(ctx, controllerprocess.Config{Bin: bin, Kubeconfig: e.Cluster.KubeconfigPath, LogPath: logPath, Args: args})
	if err != nil {
		t.Fatalf("controller %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("log of controller %s:%s", name, controllerprocess.Tail(logPath, 60))
		}
	})
	return p
}

// WithoutController stops the in-process controller until t ends, for tests that
// run controllers as processes; it is started again, with the same options, when
// t ends.
func (e *Env) WithoutController(t testing.TB) {
	t.Helper()
	if e.cancelController == nil {
		return
	}
	opts := e.controllerOptions
	if err := e.StopController(); err != nil {
		t.Fatalf("stop the in-process controller: %v", err)
	}
	t.Cleanup(func() {
		if err := e.StartController(opts); err != nil {
			t.Errorf("restart the in-process controller: %v", err)
		}
	})
}
