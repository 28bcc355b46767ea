package testenv

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/controllerprocess"
)

// ControllerProcess runs `limbo controller --kubeconfig <the cluster's> args...`
// as a child process until t ends, and waits until it is ready. Its log is
// printed when t fails. Use WithoutController first, so that the in-process
// controller does not act as well.
func (e *Env) ControllerProcess(t testing.TB, name string, args ...string) *controllerprocess.Process {
	t.Helper()
	return e.ControllerProcessWithKubeconfig(t, name, e.Cluster.KubeconfigPath, args...)
}

// ControllerProcessWithKubeconfig is ControllerProcess with the controller's
// credentials read from kubeconfig: a test runs it as a user of its own, with
// the RBAC it grants.
func (e *Env) ControllerProcessWithKubeconfig(t testing.TB, name, kubeconfig string, args ...string) *controllerprocess.Process {
	t.Helper()
	bin := e.Binary(t, "limbo")
	logPath := filepath.Join(t.TempDir(), name+".log")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := controllerprocess.Start(ctx, controllerprocess.Config{Bin: bin, Kubeconfig: kubeconfig, LogPath: logPath, Args: args})
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
