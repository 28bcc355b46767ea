package controllerprocess

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// helperEnv makes the test binary, started as the controller, play one: it
// serves /readyz and /metrics on the addresses it is given, and logs its
// arguments and each readiness probe it answers.
const helperEnv = "CONTROLLERPROCESS_TEST_CONTROLLER"

// inheritedEnv is set in the test's environment: the controller inherits it.
const inheritedEnv = "CONTROLLERPROCESS_TEST_INHERITED"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		fakeController(mode)
		return
	}
	os.Exit(m.Run())
}

// fakeController is the child process. mode "exit" fails at once; "slow" is
// not ready at its first probe; "ready" is ready from the start.
func fakeController(mode string) {
	fmt.Println("args:", strings.Join(os.Args[1:], " "))
	fmt.Println("inherited:", os.Getenv(inheritedEnv))
	if mode == "exit" {
		fmt.Println("cannot reach the API server")
		os.Exit(3)
	}
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	metrics := fs.String("metrics-bind-address", "", "")
	probe := fs.String("health-probe-bind-address", "", "")
	pprof := fs.String("pprof-bind-address", "", "")
	fs.String("kubeconfig", "", "")
	fs.String("zap-log-level", "", "")
	args := os.Args[1:]
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // the command
	}
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	var probes atomic.Int32
	probeMux := http.NewServeMux()
	probeMux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		status := http.StatusOK
		if mode == "slow" && probes.Add(1) == 1 {
			status = http.StatusServiceUnavailable
		}
		fmt.Println("readyz", status)
		w.WriteHeader(status)
	})
	metricsMux := http.NewServeMux()
	metricsMux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "limbo_reconciles_total 7")
	})
	serve := func(addr string, h http.Handler) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		go http.Serve(l, h) //nolint:errcheck // the process is killed
	}
	serve(*metrics, metricsMux)
	serve(*probe, probeMux)
	serve(*pprof, http.NewServeMux()) // no profiles: every path is 404
	select {}
}

func helperConfig(t *testing.T, mode string) Config {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(inheritedEnv, "yes")
	return Config{Bin: bin, Kubeconfig: "/k", LogPath: filepath.Join(t.TempDir(), "controller.log"), Env: []string{helperEnv + "=" + mode},
		Args: []string{"--zap-log-level=debug"}}
}

func readLog(t *testing.T, p *Process) string {
	t.Helper()
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Start runs `limbo controller` (the default command) with the kubeconfig, the
// addresses it chose and the configuration's arguments, in the test's
// environment and the configuration's, and returns once /readyz answers 200: a 503 is not
// ready. Metrics scrapes it. A second controller with the same configuration
// is refused while the first runs; once it is killed, StartAgain runs it again
// with its output appended to the same log.
func TestStartUntilReadyThenStartAgain(t *testing.T) {
	ctx := context.Background()
	p, err := Start(ctx, helperConfig(t, "slow"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	log := readLog(t, p)
	wantArgs := fmt.Sprintf("args: controller --kubeconfig /k --metrics-bind-address %s --health-probe-bind-address %s --pprof-bind-address %s --zap-log-level=debug\ninherited: yes\n",
		p.MetricsAddr, p.ProbeAddr, p.PprofAddr)
	if !strings.HasPrefix(log, wantArgs) || strings.Count(log, "readyz ") != 2 || !strings.HasSuffix(log, "readyz 200\n") {
		t.Errorf("log when Start returned:\n%s\nwant the arguments %q, then a 503 and a 200 from /readyz", log, wantArgs)
	}
	if err := p.Alive(); err != nil {
		t.Errorf("Alive: %v", err)
	}
	samples, err := p.Metrics(ctx)
	if err != nil || samples.Sum("limbo_reconciles_total", nil) != 7 {
		t.Errorf("Metrics: %v, %v; want limbo_reconciles_total 7", samples, err)
	}
	// Only /metrics is served: another path's 404 is an error, not a body.
	if err := p.Profile(ctx, "heap", "", filepath.Join(t.TempDir(), "heap")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Profile of a path answered 404: %v, want the status as an error", err)
	}

	if _, err := p.StartAgain(ctx); err == nil || !strings.Contains(err.Error(), "limbo controller is still running") {
		t.Errorf("StartAgain of a running controller: %v, want it refused", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Alive(); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("Alive after Kill: %v, want the exit", err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill of a controller gone already: %v", err)
	}
	if _, err := p.Metrics(ctx); err == nil {
		t.Error("Metrics of a killed controller: no error")
	}
	again, err := p.StartAgain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	if log := readLog(t, again); !strings.HasPrefix(log, wantArgs) || !strings.Contains(log, "\n=== limbo controller started again at ") {
		t.Errorf("log after StartAgain:\n%s\nwant the first run's, then the second's", log)
	}
	again.Stop()
	if err := again.Alive(); err == nil || !strings.Contains(err.Error(), "signal: terminated") {
		t.Errorf("Alive after Stop: %v, want the exit", err)
	}
}

// A controller that exits before it is ready fails Start with its exit status
// and its log's last lines. A command and a name of the configuration replace
// limbo's.
func TestStartOfAControllerThatExits(t *testing.T) {
	cfg := helperConfig(t, "exit")
	cfg.Command, cfg.Name = []string{}, "kro"
	_, err := Start(context.Background(), cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "kro exited: exit status 3") ||
		!strings.Contains(err.Error(), "\n  args: --kubeconfig /k --metrics-bind-address") ||
		!strings.HasSuffix(err.Error(), "\n  cannot reach the API server") {
		t.Errorf("Start: %v; want kro's exit status 3 and its log", err)
	}
}

// Tail gives the last lines of a log, indented under the message it ends.
func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	for _, tt := range []struct {
		content string
		want    string
	}{
		{"", ""},
		{"a\nb\n", "\n  a\n  b"},
		{"a\nb\nc", "\n  a\n  b\n  c"},
		{"a\nb\nc\nd\n", "\n  b\n  c\n  d"},
	} {
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := Tail(path, 3); got != tt.want {
			t.Errorf("Tail(%q, 3) = %q, want %q", tt.content, got, tt.want)
		}
	}
	if got := Tail(filepath.Join(t.TempDir(), "missing"), 3); got != "" {
		t.Errorf("Tail of a missing file = %q", got)
	}
}
