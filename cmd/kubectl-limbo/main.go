// Command kubectl-limbo is the kubectl plugin of limbo: with the binary on PATH,
// `kubectl limbo ...` lists what is in limbo and when it goes, expedites or
// cancels a deletion, and shows a Bundle's dependency graph.
//
//	kubectl limbo pending [-A | -n NS] [-l SELECTOR] [-o wide|json|yaml|name] [--no-headers] [--chunk-size N]
//	kubectl limbo expedite TYPE/NAME
//	kubectl limbo cancel TYPE/NAME
//	kubectl limbo graph BUNDLE [-o text|dot]
//
// The usual kubectl flags (--kubeconfig, --context, -n/--namespace, ...) work
// as in kubectl; `kubectl-limbo completion bash|zsh|fish|powershell` prints a
// shell completion script. See docs/kubectl-limbo.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, nil, time.Now)
	stop()
	os.Exit(code)
}

// run executes the plugin with args (without the program name) and returns the
// exit code: 0 on success, 1 on error, the error being printed on
// streams.ErrOut as "error: ..." like kubectl does. newClients builds the
// clients from the parsed kubectl flags; nil means from the kubeconfig, as
// kubectl does. now is the clock; nil means time.Now.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams, newClients func(*genericclioptions.ConfigFlags) clientFactory, now func() time.Time) int {
	root := newRootCommand(streams, newClients, now)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		return 1
	}
	return 0
}

// newRootCommand returns the `kubectl limbo` command with its subcommands.
func newRootCommand(streams genericiooptions.IOStreams, newClients func(*genericclioptions.ConfigFlags) clientFactory, now func() time.Time) *cobra.Command {
	// The warning printer, as kubectl wires it: the RESTMapper's short-name
	// expander warns on it when a short name could match another resource
	// than the one taken (cm of two API groups), as kubectl get warns.
	configFlags := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0).
		WithWarningPrinter(streams)
	if newClients == nil {
		newClients = newKubeconfigFactory
	}
	if now == nil {
		now = time.Now
	}
	o := &options{IOStreams: streams, clients: newClients(configFlags), now: now}

	root := &cobra.Command{
		Use:   "kubectl-limbo",
		Short: "Inspect and steer limbo's soft deletes",
		Long: `kubectl limbo lists what is in limbo (objects and external items waiting for
their deletion delay to expire) and when it goes, expedites or cancels a
deletion, and shows a Bundle's dependency graph.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl limbo"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	configFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newPendingCommand(o),
		newExpediteCommand(o),
		newCancelCommand(o),
		newGraphCommand(o),
	)
	registerCompletions(root, o)
	return root
}
