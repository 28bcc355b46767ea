package localcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Binaries of the control plane, as `make cluster-bins` names them.
const (
	EtcdBinary                  = "etcd"
	APIServerBinary             = "kube-apiserver"
	ControllerManagerBinary     = "kube-controller-manager"
	defaultStartTimeout         = 2 * time.Minute
	stopGrace                   = 15 * time.Second
	defaultControllerManagerSet = "garbagecollector,namespace,serviceaccount,serviceaccount-token,deployment,replicaset"
)

// WorkloadControllers is Config.Controllers for a control plane that stands for a
// workload cluster: the default set plus the volume controllers, so that claims
// bind to pre-bound PVs, a deleted claim's PV is Released, and the protection
// finalizers go once nothing uses a claim or PV. (No provisioner deletes a PV and
// no cloud controller guards a LoadBalancer Service: tests and examples play them.)
const WorkloadControllers = defaultControllerManagerSet + ",persistentvolume-binder,pvc-protection,pv-protection"

// Config says where the binaries are and where the cluster keeps its state.
type Config struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager. Empty means
	// FindBinDir().
	BinDir string
	// DataDir keeps the cluster's state (etcd data, keys, kubeconfig, logs) across
	// restarts. Empty means a temporary directory that Stop removes.
	DataDir string
	// CRDPaths are files or directories of CustomResourceDefinitions installed before
	// kube-controller-manager starts, so that its garbage collector knows them at once;
	// the other objects there (limbo's admission policy) are applied after them.
	CRDPaths []string
	// Controllers is kube-controller-manager's --controllers. Empty means the garbage
	// collector, the namespace controller, the service account controllers, and the
	// deployment and replica set controllers (so Deployments report readiness).
	Controllers string
	// StartTimeout bounds the wait for every component to be healthy.
	StartTimeout time.Duration
	// ControllerManagerVerbosity is kube-controller-manager's --v (0: errors and
	// warnings; 2: also the garbage collector's resyncs of its monitors).
	ControllerManagerVerbosity int
}

// Cluster is a running control plane.
type Cluster struct {
	// KubeconfigPath is an admin kubeconfig for this cluster. It embeds the CA
	// (certificate-authority-data), so it can be copied as it is, into a Secret too.
	KubeconfigPath string
	// DataDir is where the cluster keeps its state and logs.
	DataDir string

	restConfig *rest.Config
	removeData bool
	procs      []*process // in start order
}

// FindBinDir is $LIMBO_BIN_DIR, else the nearest bin/ above the working directory
// that holds kube-apiserver. Without either, its error says where it looked:
//
//	no bin/ holding kube-apiserver in /tmp or any directory above it ($LIMBO_BIN_DIR is not set)
//
// (Its callers add what to do: a flag of their own, or $LIMBO_BIN_DIR.)
func FindBinDir() (string, error) {
	if dir := os.Getenv("LIMBO_BIN_DIR"); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("no bin/ holding %s: the working directory: %w ($LIMBO_BIN_DIR is not set)", APIServerBinary, err)
	}
	for dir := wd; ; {
		candidate := filepath.Join(dir, "bin")
		if _, err := os.Stat(filepath.Join(candidate, APIServerBinary)); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("no bin/ holding %s in %s or any directory above it ($LIMBO_BIN_DIR is not set)", APIServerBinary, wd)
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Start runs etcd, kube-apiserver and kube-controller-manager on free loopback ports
// and returns once all three are healthy and the CRDs are established. On error,
// whatever was started is stopped again.
func Start(ctx context.Context, cfg Config) (cluster *Cluster, err error) {
	if cfg.BinDir == "" {
		if cfg.BinDir, err = FindBinDir(); err != nil {
			return nil, fmt.Errorf("%w: set $LIMBO_BIN_DIR to the directory of %s, %s and %s, "+
				"or work inside limbo's repository once `make cluster-bins` has put them into its bin/",
				err, EtcdBinary, APIServerBinary, ControllerManagerBinary)
		}
	}
	if cfg.Controllers == "" {
		cfg.Controllers = defaultControllerManagerSet
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = defaultStartTimeout
	}
	for _, bin := range []string{EtcdBinary, APIServerBinary, ControllerManagerBinary} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, bin)); err != nil {
			dir, _ := filepath.Abs(cfg.BinDir) // the directory searched, wherever the command ran
			return nil, fmt.Errorf("%s not found in %s: run `make cluster-bins` first (in the repository's root)", bin, dir)
		}
	}
	c := &Cluster{DataDir: cfg.DataDir}
	if c.DataDir == "" {
		sweepAbandonedTempDirs()
		if c.DataDir, err = os.MkdirTemp("", tempDirPrefix); err != nil {
			return nil, err
		}
		c.removeData = true
		if err := os.WriteFile(filepath.Join(c.DataDir, ownerPIDFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return nil, err
		}
	} else if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	pki := filepath.Join(c.DataDir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	saKey, err := ensureServiceAccountKey(pki)
	if err != nil {
		return nil, err
	}
	adminToken, kcmToken, tokenFile, err := ensureTokens(pki)
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcdArgs := []string{
		"--data-dir=" + filepath.Join(c.DataDir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--log-level=warn",
	}
	if c.removeData {
		// A throwaway cluster does not need durable writes; this makes tests faster.
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync=true")
	}
	if err := c.start("etcd", filepath.Join(cfg.BinDir, EtcdBinary), etcdArgs); err != nil {
		return nil, err
	}

	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(pki, "apiserver"),
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--v=0",
	}
	if err := c.start("kube-apiserver", filepath.Join(cfg.BinDir, APIServerBinary), apiArgs); err != nil {
		return nil, err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	caFile := filepath.Join(pki, "apiserver", "apiserver.crt")
	c.KubeconfigPath = filepath.Join(c.DataDir, "kubeconfig")
	if err := c.waitForAPIServer(ctx, server, caFile, adminToken); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(c.KubeconfigPath, server, caFile, "admin", adminToken); err != nil {
		return nil, err
	}
	if len(cfg.CRDPaths) > 0 {
		if err := InstallCRDs(ctx, c.restConfig, cfg.CRDPaths...); err != nil {
			return nil, err
		}
	}

	kcmKubeconfig := filepath.Join(pki, "kube-controller-manager.kubeconfig")
	if err := writeKubeconfig(kcmKubeconfig, server, caFile, "kube-controller-manager", kcmToken); err != nil {
		return nil, err
	}
	kcmArgs := []string{
		"--kubeconfig=" + kcmKubeconfig,
		"--controllers=" + cfg.Controllers,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--cert-dir=" + filepath.Join(pki, "kube-controller-manager"),
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + caFile,
		"--use-service-account-credentials=false",
		"--v=" + strconv.Itoa(cfg.ControllerManagerVerbosity),
	}
	if err := c.start("kube-controller-manager", filepath.Join(cfg.BinDir, ControllerManagerBinary), kcmArgs); err != nil {
		return nil, err
	}
	if err := c.waitHealthy(ctx, "kube-controller-manager", "https://127.0.0.1:"+strconv.Itoa(kcmPort)+"/healthz"); err != nil {
		return nil, err
	}
	if slices.Contains(strings.Split(cfg.Controllers, ","), "serviceaccount") {
		if err := c.waitControllersStarted(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// waitControllersStarted waits until kube-controller-manager runs its controllers:
// its serviceaccount controller made the default ServiceAccount. It answers
// /healthz before that, and exits when kube-apiserver goes away while it is still
// starting them, so a kube-apiserver restart must come after.
func (c *Cluster) waitControllersStarted(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	return c.poll(ctx, "kube-controller-manager's controllers", func() error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// LogPath is the log file of the component name ("etcd", "kube-apiserver",
// "kube-controller-manager").
func (c *Cluster) LogPath(name string) string {
	return filepath.Join(c.DataDir, "logs", name+".log")
}

// PIDs are the process ids of the running components, by name ("etcd",
// "kube-apiserver", "kube-controller-manager").
func (c *Cluster) PIDs() map[string]int {
	out := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		out[p.name] = p.cmd.Process.Pid
	}
	return out
}

func (c *Cluster) start(name, bin string, args []string) error {
	p, err := startProcess(name, bin, args, c.LogPath(name))
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// Stop stops the components in reverse order and removes a temporary data directory.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop(stopGrace))
	}
	c.procs = nil
	if c.removeData {
		errs = append(errs, os.RemoveAll(c.DataDir))
	}
	return errors.Join(errs...)
}

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after a grace
// period, as a rolling upgrade of the control plane would) and starts it again
// with the same flags, port and certificates, so that clients and kubeconfigs
// keep working. It returns once the new kube-apiserver answers /readyz; etcd and
// kube-controller-manager keep running throughout (kube-controller-manager exits
// if kube-apiserver goes away while it is still starting its controllers: restart
// once they run). It must not run concurrently with Stop.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return errors.New("kube-apiserver is not running")
	}
	old := c.procs[i]
	if err := old.stop(stopGrace); err != nil {
		return err
	}
	p, err := startProcess(old.name, old.bin, old.args, old.logPath)
	if err != nil {
		return err
	}
	c.procs[i] = p
	ctx, cancel := context.WithTimeout(ctx, defaultStartTimeout)
	defer cancel()
	return c.waitAPIServerReady(ctx)
}

// checkAlive fails when any started component has exited.
func (c *Cluster) checkAlive() error {
	for _, p := range c.procs {
		if ok, err := p.exited(); ok {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitForAPIServer(ctx context.Context, server, caFile, token string) error {
	c.restConfig = &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
		QPS:             200,
		Burst:           400,
	}
	return c.waitAPIServerReady(ctx)
}

// waitAPIServerReady polls kube-apiserver's /readyz with the admin configuration.
func (c *Cluster) waitAPIServerReady(ctx context.Context) error {
	caFile := c.restConfig.CAFile
	return c.poll(ctx, "kube-apiserver", func() error {
		if _, err := os.Stat(caFile); err != nil {
			return err
		}
		clientset, err := kubernetes.NewForConfig(c.restConfig)
		if err != nil {
			return err
		}
		body, err := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		return nil
	})
}

func (c *Cluster) waitHealthy(ctx context.Context, name, url string) error {
	// kube-controller-manager serves a self-signed certificate of its own; /healthz
	// is readable without credentials.
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
	}
	return c.poll(ctx, name, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// poll calls check until it succeeds, a component dies, or ctx ends.
func (c *Cluster) poll(ctx context.Context, name string, check func() error) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		if err := c.checkAlive(); err != nil {
			return err
		}
		if last = check(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w (last error: %v; log: %s)", name, ctx.Err(), last, c.LogPath(name))
		case <-ticker.C:
		}
	}
}

const (
	tempDirPrefix = "limbo-cluster-"
	ownerPIDFile  = "owner.pid"
)

// sweepAbandonedTempDirs removes the temporary data directories of earlier clusters
// whose owner died without cleaning up (SIGKILL leaves no chance to). Their
// processes are already gone: they die with their parent.
func sweepAbandonedTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerPIDFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// ensureServiceAccountKey returns the path of the service account signing key,
// creating it on first start so that tokens stay valid across restarts.
func ensureServiceAccountKey(pki string) (string, error) {
	path := filepath.Join(pki, "service-account.key")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return path, os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

// ensureTokens returns the admin and controller-manager bearer tokens and the
// API server's static token file, creating them on first start.
func ensureTokens(pki string) (admin, kcm, file string, err error) {
	file = filepath.Join(pki, "tokens.csv")
	if data, readErr := os.ReadFile(file); readErr == nil {
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) == 2 {
			return strings.SplitN(lines[0], ",", 2)[0], strings.SplitN(lines[1], ",", 2)[0], file, nil
		}
	}
	admin, kcm = randomToken(), randomToken()
	content := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,system:kube-controller-manager,kube-controller-manager,\"system:masters\"\n", admin, kcm)
	return admin, kcm, file, os.WriteFile(file, []byte(content), 0o600)
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeKubeconfig writes a kubeconfig that embeds the API server's CA rather than
// naming its file, so that it works as it is from anywhere, a Secret included.
func writeKubeconfig(path, server, caFile, user, token string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read the API server's CA: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["limbo-dev"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["limbo-dev"] = &clientcmdapi.Context{Cluster: "limbo-dev", AuthInfo: user}
	cfg.CurrentContext = "limbo-dev"
	return clientcmd.WriteToFile(*cfg, path)
}

// FreePorts returns n distinct free loopback ports.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
