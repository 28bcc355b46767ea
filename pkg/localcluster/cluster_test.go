package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// binDir is the repository's bin/, where `make cluster-bins` puts the binaries.
func binDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "bin")
	if _, err := os.Stat(filepath.Join(dir, APIServerBinary)); err != nil {
		t.Skipf("no control-plane binaries in %s: run make cluster-bins (make test does)", dir)
	}
	return dir
}

// childEnv makes the test binary act as a parent that starts a cluster, prints its
// processes' pids and ports, and waits to be killed.
const childEnv = "LIMBO_LOCALCLUSTER_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		c, err := Start(context.Background(), Config{BinDir: dir})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready", strings.Join(describe(c), " "))
		select {} // until killed
	}
	os.Exit(m.Run())
}

// describe lists "pid:port" of the cluster's processes.
func describe(c *Cluster) []string {
	var out []string
	for _, p := range c.procs {
		out = append(out, strconv.Itoa(p.cmd.Process.Pid))
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Start brings up a control plane that answers with an admin kubeconfig; Stop
// leaves no process, no listening port and no data directory behind.
func TestStartStop(t *testing.T) {
	c, err := Start(context.Background(), Config{BinDir: binDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.36.3" {
		t.Errorf("server version = %v (%v), want v1.36.3", v, err)
	}
	host := strings.TrimPrefix(cfg.Host, "https://")
	pids := describe(c)
	dataDir := c.DataDir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		n, _ := strconv.Atoi(pid)
		if alive(n) {
			t.Errorf("process %d survived Stop", n)
		}
	}
	if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still listening after Stop", host)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("temporary data directory %s survived Stop (%v)", dataDir, err)
	}
}

// A parent killed with SIGKILL (no chance to clean up) takes its control plane
// with it, and the next Start sweeps its data directory.
func TestChildrenDieWithKilledParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+binDir(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		_ = cmd.Process.Kill()
		t.Fatalf("child: %q %v", line, err)
	}
	var pids []int
	for _, f := range strings.Fields(strings.TrimPrefix(line, "ready ")) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	if len(pids) != 3 {
		t.Fatalf("want 3 processes, got %v", pids)
	}
	var childDir string
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		if data, _ := os.ReadFile(filepath.Join(dir, ownerPIDFile)); strings.TrimSpace(string(data)) == strconv.Itoa(cmd.Process.Pid) {
			childDir = dir
		}
	}
	if childDir == "" {
		t.Fatalf("no data directory owned by the child (pid %d) among %v", cmd.Process.Pid, dirs)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	for _, pid := range pids {
		waitFor(t, fmt.Sprintf("process %d is gone", pid), func() bool { return !alive(pid) })
	}
	sweepAbandonedTempDirs()
	if _, err := os.Stat(childDir); !os.IsNotExist(err) {
		t.Errorf("the killed parent's data directory %s was not swept (%v)", childDir, err)
	}
}

// The kubeconfigs written embed the CA, so that they work when copied elsewhere (a
// Secret), and a missing CA file is an error rather than a kubeconfig that fails later.
func TestWriteKubeconfigEmbedsCA(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(path, "https://127.0.0.1:6443", caFile, "admin", "secret-token"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	if string(cluster.CertificateAuthorityData) != string(ca) || cluster.CertificateAuthority != "" {
		t.Errorf("cluster CA: data %q, file %q; want the CA embedded and no file", cluster.CertificateAuthorityData, cluster.CertificateAuthority)
	}
	if cluster.Server != "https://127.0.0.1:6443" || cfg.AuthInfos["admin"].Token != "secret-token" {
		t.Errorf("server %q, token %q", cluster.Server, cfg.AuthInfos["admin"].Token)
	}
	if err := writeKubeconfig(filepath.Join(dir, "other"), "https://127.0.0.1:6443", filepath.Join(dir, "missing.crt"), "admin", "t"); err == nil {
		t.Error("a missing CA file wrote a kubeconfig")
	}
}

// RestartAPIServer brings kube-apiserver back on the same address with the same
// credentials and the same data: a client built before the restart reads an
// object written before it, and etcd and kube-controller-manager are the same
// processes as before.
func TestRestartAPIServer(t *testing.T) {
	c, err := Start(context.Background(), Config{BinDir: binDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survives-restart", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := describe(c)
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	after := describe(c)
	if before[0] != after[0] || before[2] != after[2] {
		t.Errorf("etcd or kube-controller-manager changed: pids %v before, %v after", before, after)
	}
	if before[1] == after[1] {
		t.Errorf("kube-apiserver was not restarted: pid %s before and after", before[1])
	}
	n, _ := strconv.Atoi(before[1])
	if alive(n) {
		t.Errorf("the old kube-apiserver (pid %d) is still running", n)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "survives-restart", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read after restart with the client built before it: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("data after restart = %v, want k=v", got.Data)
	}
	if err := c.checkAlive(); err != nil {
		t.Errorf("a component died: %v", err)
	}
}
