// Command limbo is the limbo controller and its local development environment.
//
//	limbo controller [--kubeconfig PATH] [flags]   run the controller
//	limbo dev [--data-dir DIR] [--controller=false] start a local control plane (and the controller)
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "limbo",
		Short:         "limbo reconciles Bundles and deletes what leaves them, after a delay you choose",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newControllerCommand(), newDevCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "limbo:", err)
		os.Exit(1)
	}
}
