package it

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/localcluster"
)

// `make run` is `limbo dev --simulators`: the first thing a new user runs. Its
// whole path, as the README tells it: limbo dev starts a control plane, the
// simulators and the controller, prints the command to apply the first example,
// which goes Ready; Ctrl-C stops everything and exits 0; and with --data-dir
// the cluster's state is kept across a restart — the same Bundle, still Ready.
func TestLimboDevQuickStart(t *testing.T) {
	t.Parallel()
	bin := env.Binary(t, "limbo")
	dataDir := t.TempDir()
	var uid string
	for run := 1; run <= 2; run++ {
		dev := startLimboDev(t, bin, dataDir)
		c := dev.client(t)
		b := &limbov1alpha1.Bundle{}
		key := client.ObjectKey{Namespace: "default", Name: "configmap-chain"}
		if run == 1 {
			// The command limbo dev printed, run as printed (in the repository's root).
			dev.runPrinted(t, "kubectl apply -f examples/configmap-chain.yaml")
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			if err := c.Get(context.Background(), key, b); err != nil {
				return err
			}
			return conditionIs(b, limbov1alpha1.ConditionReady, metav1.ConditionTrue, "")
		})
		switch {
		case run == 1:
			uid = string(b.UID)
		case string(b.UID) != uid:
			t.Errorf("after a restart with --data-dir: Bundle %s has UID %s, want %s (the state was not kept)", key, b.UID, uid)
		}
		dev.interrupt(t)
	}
}

// limboDev is a `limbo dev --simulators` process.
type limboDev struct {
	cmd        *exec.Cmd
	exited     chan struct{} // closed when it exits, with its status in err
	err        error
	stdout     *lockedBuffer
	stderr     *lockedBuffer
	kubeconfig string
	probeAddr  string
}

// lockedBuffer is a bytes.Buffer a process writes into while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startLimboDev starts limbo dev in the repository's root with its state in
// dataDir, the simulators on free ports, and waits until its controller is ready.
// A start that lost its health probe's port to another process between the
// test's choice of it and limbo dev's listen (the tests' control planes take
// free ports all the while) is tried again on another.
func startLimboDev(t *testing.T, bin, dataDir string) *limboDev {
	t.Helper()
	for attempt := 1; ; attempt++ {
		d := tryLimboDev(t, bin, dataDir)
		if d != nil {
			return d
		}
		if attempt == 3 {
			t.Fatal("limbo dev found its health probe's port taken three times")
		}
	}
}

// tryLimboDev is one try of startLimboDev: nil when limbo dev exited because
// the port it was given was taken.
func tryLimboDev(t *testing.T, bin, dataDir string) *limboDev {
	t.Helper()
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	d := &limboDev{exited: make(chan struct{}), stdout: &lockedBuffer{}, stderr: &lockedBuffer{},
		kubeconfig: filepath.Join(dataDir, "kubeconfig"), probeAddr: "127.0.0.1:" + strconv.Itoa(ports[0])}
	d.cmd = exec.Command(bin, "dev", "--simulators", "--data-dir", dataDir,
		"--bin-dir", filepath.Join(env.RepoRoot, "bin"),
		"--storageos-sim-addr", "127.0.0.1:0", "--openstack-sim-addr", "127.0.0.1:0",
		"--metrics-bind-address", "0", "--health-probe-bind-address", d.probeAddr,
		"--pprof-bind-address", "0")
	d.cmd.Dir = env.RepoRoot
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	portTaken := false
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default: // a failed test left it running
			_ = d.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-d.exited:
			case <-time.After(time.Minute):
				_ = d.cmd.Process.Kill()
				<-d.exited
			}
		}
		if t.Failed() && !portTaken {
			t.Logf("limbo dev stdout:\n%s\nstderr (last lines):\n%s", d.output(), lastLines(d.errors(), 40))
		}
	})
	testenv.Eventually(t, 3*time.Minute, func() error {
		select {
		case <-d.exited:
			if strings.Contains(d.errors(), d.probeAddr+": bind: address already in use") {
				portTaken = true
				return nil
			}
			t.Fatalf("limbo dev exited before its controller was ready: %v", d.err)
		default:
		}
		if !strings.Contains(d.output(), "controller running") {
			return errors.New("limbo dev has not started its controller yet")
		}
		resp, err := http.Get("http://" + d.probeAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	if portTaken {
		t.Logf("limbo dev found its health probe's port %s taken; trying another", d.probeAddr)
		return nil
	}
	return d
}

// client is a client of limbo dev's control plane, from the kubeconfig it wrote.
func (d *limboDev) client(t *testing.T) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runPrinted runs command, which limbo dev must have printed after
// `export KUBECONFIG=<its kubeconfig>;`, with that KUBECONFIG and bin/ first in
// PATH (as the README's quick start sets them).
func (d *limboDev) runPrinted(t *testing.T, command string) {
	t.Helper()
	printed := "export KUBECONFIG=" + d.kubeconfig + "; " + command
	if !strings.Contains(d.output(), printed) {
		t.Fatalf("limbo dev did not print %q", printed)
	}
	args := strings.Fields(command)
	cmd := exec.Command(filepath.Join(env.RepoRoot, "bin", args[0]), args[1:]...)
	cmd.Dir = env.RepoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

// interrupt sends limbo dev Ctrl-C's signal and waits until it exits, which it
// must do with status 0, having stopped its control plane.
func (d *limboDev) interrupt(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
		if d.err != nil {
			t.Fatalf("limbo dev after Ctrl-C: %v", d.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("limbo dev still running 2 minutes after Ctrl-C")
	}
	// Its control plane went with it: the API server no longer answers.
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	host, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", host.Host, 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("the API server of limbo dev (%s) still listens after limbo dev exited", cfg.Host)
	}
}

func (d *limboDev) output() string { return d.stdout.String() }
func (d *limboDev) errors() string { return d.stderr.String() }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
