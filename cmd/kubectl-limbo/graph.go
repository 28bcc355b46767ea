package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/graph"
)

const graphExample = `  # The dependency graph of Bundle shop, in creation order, with each state
  kubectl limbo graph shop -n team-a

  # As a picture
  kubectl limbo graph shop -o dot | dot -Tsvg > shop.svg`

func newGraphCommand(o *options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "graph BUNDLE [-o text|dot]",
		Short: "Show a Bundle's dependency graph",
		Long: `Show a Bundle's dependency graph: with -o text (the default), one line per
resource in creation (topological) order, with the resources it depends on and
its state from the Bundle's status; with -o dot, a Graphviz digraph in which an
edge goes from a resource to one it depends on.

A Bundle whose resources cannot be ordered (a dependency cycle, a reference to a
missing resource) is an error.`,
		Example:           graphExample,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeBundles,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "dot" {
				return fmt.Errorf("unsupported output format %q: use text or dot", output)
			}
			bundle, err := o.getBundle(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printGraph(o.Out, bundle, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "Output format: text or dot.")
	return cmd
}

// getBundle reads a Bundle named NAME, or TYPE/NAME with any TYPE kubectl
// resolves to Bundles (bundle, bundles, bdl, bundles.limbo.dev, ...).
func (o *options) getBundle(ctx context.Context, arg string) (*limbov1alpha1.Bundle, error) {
	args := []string{arg}
	if !strings.Contains(arg, "/") {
		args = []string{limbov1alpha1.BundleGVK.GroupKind().String(), arg}
	}
	t, c, err := o.resolveWithClient(args)
	if err != nil {
		return nil, err
	}
	if t.mapping.GroupVersionKind.GroupKind() != limbov1alpha1.BundleGVK.GroupKind() {
		return nil, fmt.Errorf("expected a Bundle, got %s", t)
	}
	var bundle limbov1alpha1.Bundle
	if err := c.Get(ctx, t.key(), &bundle); err != nil {
		return nil, err
	}
	return &bundle, nil
}

// printGraph prints the dependency graph of bundle as text or dot. It fails,
// printing nothing, when the resources cannot be ordered.
func printGraph(out io.Writer, bundle *limbov1alpha1.Bundle, format string) error {
	g := graph.ForResources(bundle.Spec.Resources)
	order, err := g.TopologicalSort()
	if err != nil {
		return fmt.Errorf("bundle %s/%s: %w", bundle.Namespace, bundle.Name, err)
	}
	states := map[string]string{}
	for _, r := range bundle.Status.Resources {
		states[r.Name] = string(r.State)
	}
	state := func(name string) string {
		if s := states[name]; s != "" {
			return s
		}
		return "Unknown"
	}

	var b strings.Builder
	if format == "dot" {
		fmt.Fprintf(&b, "digraph %s {\n", dotID(bundle.Namespace+"/"+bundle.Name))
		for _, name := range order {
			fmt.Fprintf(&b, "  %s [label=%s];\n", dotID(name), dotID(name+"\n"+state(name)))
		}
		for _, name := range order {
			for _, dep := range g.Dependencies(name) {
				fmt.Fprintf(&b, "  %s -> %s;\n", dotID(name), dotID(dep))
			}
		}
		b.WriteString("}\n")
	} else {
		nameWidth, depsWidth := 0, 0
		deps := make(map[string]string, len(order))
		for _, name := range order {
			if d := g.Dependencies(name); len(d) > 0 {
				deps[name] = "<- " + strings.Join(d, ", ")
			}
			nameWidth = max(nameWidth, len(name))
			depsWidth = max(depsWidth, len(deps[name]))
		}
		for _, name := range order {
			line := fmt.Sprintf("%-*s  %-*s   [%s]", nameWidth, name, depsWidth, deps[name], state(name))
			if depsWidth == 0 {
				line = fmt.Sprintf("%-*s   [%s]", nameWidth, name, state(name))
			}
			b.WriteString(line + "\n")
		}
	}
	_, err = io.WriteString(out, b.String())
	return err
}

// dotID quotes s as a Graphviz ID; a newline becomes \n, which Graphviz shows
// as a line break in a label.
func dotID(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
