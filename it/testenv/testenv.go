// Package testenv is the harness of limbo's integration tests: one real control
// plane per test package (etcd, kube-apiserver, kube-controller-manager from
// pkg/localcluster), the limbo controller running in-process against it, and a
// fresh namespace for every test.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/localcluster"
)

// Env is the environment shared by the tests of one package.
type Env struct {
	Cluster   *localcluster.Cluster
	Config    *rest.Config
	Client    client.Client
	Clientset kubernetes.Interface
	// RepoRoot is the repository's root directory.
	RepoRoot string

	cancelController context.CancelFunc
	controllerDone   chan error
	// controllerOptions are the options the controller was last started with.
	controllerOptions controller.Options
	// requests records every request the in-process controller sends.
	requests requestLog
	// intercepts are the tests' interceptors of the in-process controller's requests.
	intercepts interceptors
	// second is the control plane SecondCluster starts.
	second secondCluster
}

// Options say what a test package needs.
type Options struct {
	// NoController starts only the control plane; the package runs controllers itself.
	NoController bool
	// Controller overrides the controller options; nil uses test defaults.
	Controller *controller.Options
	// ControllerManagerVerbosity is kube-controller-manager's --v.
	ControllerManagerVerbosity int
}

// Run starts the environment, runs the package's tests, stops everything and
// returns the exit code. Use it from TestMain:
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m, testenv.Options{}, &env)) }
func Run(m *testing.M, opts Options, out **Env) int {
	env, err := start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	*out = env
	code := m.Run()
	if err := env.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func start(opts Options) (*Env, error) {
	root := repoRoot()
	prebuild(root)
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel()))))
	ctx := context.Background()
	cluster, err := localcluster.Start(ctx, localcluster.Config{
		BinDir:                     filepath.Join(root, "bin"),
		CRDPaths:                   []string{filepath.Join(root, "crds"), filepath.Join(root, "it", "testdata", "crds")},
		ControllerManagerVerbosity: opts.ControllerManagerVerbosity,
	})
	if err != nil {
		return nil, err
	}
	env := &Env{Cluster: cluster, Config: cluster.RESTConfig(), RepoRoot: root}
	if env.Client, err = client.New(env.Config, client.Options{Scheme: controller.NewScheme()}); err != nil {
		_ = cluster.Stop()
		return nil, err
	}
	if env.Clientset, err = kubernetes.NewForConfig(env.Config); err != nil {
		_ = cluster.Stop()
		return nil, err
	}
	if !opts.NoController {
		copts := controller.DefaultOptions()
		if opts.Controller != nil {
			copts = *opts.Controller
		}
		copts.MetricsAddr, copts.ProbeAddr = "0", "0"
		if err := env.StartController(copts); err != nil {
			_ = cluster.Stop()
			return nil, err
		}
	}
	return env, nil
}

// StartController runs the limbo controller in-process until StopController,
// without leader election (one controller: it acts at once). Its requests are
// recorded: see ControllerRequests.
func (e *Env) StartController(opts controller.Options) error {
	opts.LeaderElect = false
	cfg := e.controllerConfig()
	mgr, err := controller.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	e.run(mgr, opts)
	return nil
}

// controllerConfig is the in-process controller's rest.Config: the cluster's,
// with every request recorded (see ControllerRequests) and passed through the
// tests' interceptors (see InterceptController).
func (e *Env) controllerConfig() *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(e.intercepts.wrap)
	cfg.Wrap(e.requests.wrap)
	return cfg
}

// run starts a built manager in the background.
func (e *Env) run(mgr manager.Manager, opts controller.Options) {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancelController = cancel
	e.controllerOptions = opts
	e.controllerDone = make(chan error, 1)
	go func() { e.controllerDone <- mgr.Start(ctx) }()
}

// ControllerOptions are the options the in-process controller was last started
// with.
func (e *Env) ControllerOptions() controller.Options { return e.controllerOptions }

// RestartController restarts the in-process controller with the options it was
// started with, as a crash and restart of the controller's Pod would: it builds
// the new controller first, then stops the running one, calls whileStopped, and
// starts the new one. The new controller is started even if whileStopped fails
// the test (t.Fatal), so that later tests find a controller running. If the new
// controller cannot be built, the running one is left alone and the error is
// returned.
func (e *Env) RestartController(whileStopped func()) error {
	if e.cancelController == nil {
		return fmt.Errorf("no controller is running")
	}
	opts := e.controllerOptions
	cfg := e.controllerConfig()
	mgr, err := controller.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("build a second controller in this process: %w", err)
	}
	if err := e.StopController(); err != nil {
		e.run(mgr, opts)
		return fmt.Errorf("stop the controller: %w", err)
	}
	defer e.run(mgr, opts)
	if whileStopped != nil {
		whileStopped()
	}
	return nil
}

// StopController stops the in-process controller and waits for it to return.
func (e *Env) StopController() error {
	if e.cancelController == nil {
		return nil
	}
	e.cancelController()
	e.cancelController = nil
	return <-e.controllerDone
}

func (e *Env) stop() error {
	if err := e.StopController(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: controller:", err)
	}
	removeBinaries()
	return errors.Join(e.stopSecondCluster(), e.Cluster.Stop())
}

func zapLevel() int8 {
	if os.Getenv("LIMBO_TEST_VERBOSE") != "" {
		return -2
	}
	return 2 // errors only: keep CI output readable
}

// Namespace creates a fresh namespace for t and deletes it when t ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	ctx := context.Background()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Client.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// namespacePrefix turns a test's name into a namespace's generateName: lower
// case, every run of characters other than letters and digits made one "-", at
// most 40 characters before the final "-".
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := b.String()
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.TrimRight(name, "-")
	if name == "" {
		name = "test"
	}
	return name + "-"
}

// Context returns a context that ends with t, bounded by timeout.
func Context(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}
