package main

import (
	"flag"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/limbo-dev/limbo/pkg/controller"
)

// loggingFlags binds zap's flags (--zap-log-level, --zap-encoder, ...) and returns a
// function that installs the configured logger. Development logging is for people
// at a terminal (console encoding); production logging is JSON. Stack traces go
// with panics only (--zap-stacktrace-level): an error line says what failed and
// where, and the 20 lines of goroutine stack that zap adds to each error by
// default buried them — a watch retried for a kind gone, a failed apply.
func loggingFlags(cmd *cobra.Command, development bool) func() {
	opts := zap.Options{Development: development, StacktraceLevel: zapcore.PanicLevel}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.BindFlags(goFlags)
	cmd.Flags().AddGoFlagSet(goFlags)
	return func() { ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts))) }
}

// restConfig loads --kubeconfig, or the in-cluster configuration, or $KUBECONFIG.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

// defaultGCPercent is the controller's GOGC unless its environment sets one. Most
// of the controller's heap is its caches, which live as long as the process; with
// the runtime's default of 100 the heap grows to twice them before each
// collection, and the pages of the garbage converging leaves between them stay
// resident. 75 holds the steady RSS at 10,000 managed objects under 100 MiB for
// GC work that the benchmark does not tell apart from noise (docs/performance.md).
const defaultGCPercent = 75

// setDefaultGCPercent applies defaultGCPercent when $GOGC is not set.
func setDefaultGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// podNamespaceEnv is the environment variable the Deployment sets to the pod's
// namespace (the downward API): --leader-election-namespace's default.
const podNamespaceEnv = "POD_NAMESPACE"

func newControllerCommand() *cobra.Command {
	opts := controller.DefaultOptions()
	if ns := os.Getenv(podNamespaceEnv); ns != "" {
		// The Lease is in the namespace limbo is installed in, wherever an
		// overlay moved it: a flag in the Deployment's args would not move.
		opts.LeaderElectionNamespace = ns
	}
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the limbo controller (in cluster, or against --kubeconfig)",
		Args:  cobra.NoArgs,
	}
	setupLogging := loggingFlags(cmd, false)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses the in-cluster configuration or $KUBECONFIG.")
	opts.BindFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		setupLogging()
		setDefaultGCPercent()
		cfg, err := restConfig(kubeconfig)
		if err != nil {
			return err
		}
		return controller.Run(ctrl.SetupSignalHandler(), cfg, opts)
	}
	return cmd
}
