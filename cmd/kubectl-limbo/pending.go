package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

const pendingExample = `  # What is in limbo in the current namespace, soonest deletion first
  kubectl limbo pending

  # ... in every namespace, with each object's delay and how long it has waited
  kubectl limbo pending -A -o wide

  # ... of the objects labelled app=shop; of Bundle shop's objects and Tombstones
  kubectl limbo pending -l app=shop
  kubectl limbo pending -l limbo.dev/bundle=shop

  # ... as JSON, or as TYPE/NAME for other kubectl commands
  kubectl limbo pending -n team-a -o json
  kubectl limbo pending -n team-a -o name`

// defaultChunkSize is the most objects one answer to a LIST holds unless
// pending's --chunk-size says otherwise: kubectl get's default. Completion
// reads in pages of it too.
const defaultChunkSize = 500

// pendingOptions are the flags of `pending`.
type pendingOptions struct {
	allNamespaces bool
	noHeaders     bool
	chunkSize     int64
	selector      string
	print         *genericclioptions.PrintFlags
}

func newPendingCommand(o *options) *cobra.Command {
	po := &pendingOptions{print: genericclioptions.NewPrintFlags("")}
	cmd := &cobra.Command{
		Use:   "pending [-A | -n NAMESPACE] [-l SELECTOR] [-o wide|json|yaml|name|...] [--no-headers] [--chunk-size N]",
		Short: "List what is in limbo and when it is deleted",
		Long: `List what is in limbo, soonest deletion first: every object of a namespaced
kind labelled limbo.dev/pending-deletion=true, every Tombstone (an external item
pending deletion), and the pending deletions that Bundles report with a message,
such as an invalid limbo.dev/deletionDelay (such an object is never deleted), or
that the label listing cannot see (a cluster-scoped item, an item in another
cluster). With -n, the rows are those -A shows in that namespace (a
cluster-scoped item's row is its Bundle's namespace's), with the messages of
the Bundles of every namespace; what the Bundles of that namespace report in
other namespaces is left out, and a warning says how many items and where (with
-l, how many -l selects there).

An object released by a Bundle's teardown is "held" while the reaper keeps it
for a Bundle that declares it (MESSAGE names the Bundle).

DELETE-AFTER is limbo.dev/deletionTimestamp + limbo.dev/deletionDelay; TIME-LEFT
is "due" once it has passed. -o wide adds DELAY and IN-LIMBO (time since the
countdown started). -o name leaves out the items in another cluster (a warning
says how many), since kubectl would take their names for objects of this one.

-l selects rows by the labels of the object each names, as kubectl get -l: the
object in limbo, or the Tombstone (its own labels: limbo.dev/bundle and
limbo.dev/pending-deletion, say), not the Bundle. A row that only a Bundle's
status gives is selected by the labels of its object, read from the cluster;
one whose object cannot be read (in another cluster, gone, not allowed) is
left out, with a warning.

Every list is read in pages of --chunk-size objects, as kubectl get reads it.`,
		Example: pendingExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format := *po.print.OutputFormat
			if err := po.validate(); err != nil {
				return err
			}
			namespace := ""
			if !po.allNamespaces {
				ns, err := o.namespace()
				if err != nil {
					return err
				}
				namespace = ns
			}
			selector, err := labels.Parse(po.selector)
			if err != nil {
				return err
			}
			src, err := newPendingSources(o.clients, po.chunkSize)
			if err != nil {
				return err
			}
			now := o.now()
			items, incomplete := collectPending(cmd.Context(), src, namespace, selector, now, o.ErrOut)
			if incomplete != nil && !errors.Is(incomplete, errIncomplete) {
				return incomplete
			}
			if (format != "" && format != "name") || po.selector != "" {
				readStatusOnlyObjects(cmd.Context(), src.Reader, items) // DELAY, deletionDelay; the labels -l matches
			}
			if po.selector != "" {
				items = selectRows(items, selector, o.ErrOut)
			}
			if len(items) == 0 && isTable(format) && incomplete == nil {
				matching := ""
				if po.selector != "" {
					matching = fmt.Sprintf(" with labels %s", selector)
				}
				if po.allNamespaces {
					fmt.Fprintf(o.ErrOut, "Nothing in limbo%s.\n", matching)
				} else {
					fmt.Fprintf(o.ErrOut, "Nothing in limbo%s in namespace %s.\n", matching, namespace)
				}
				return nil
			}
			if err := po.printPending(o.Out, o.ErrOut, items, now); err != nil {
				return err
			}
			return incomplete // what could be listed is printed; the command still fails
		},
	}
	cmd.Flags().BoolVarP(&po.allNamespaces, "all-namespaces", "A", false, "List what is in limbo in every namespace.")
	cmd.Flags().BoolVar(&po.noHeaders, "no-headers", false, "When using the default or wide output format, don't print headers.")
	cmd.Flags().StringVarP(&po.selector, "selector", "l", "", "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin' (e.g. -l key1=value1,key2=value2): the labels of the object in limbo, or of the Tombstone, each row names. Matching objects must satisfy all of the specified label constraints.")
	cmd.Flags().Int64Var(&po.chunkSize, "chunk-size", defaultChunkSize, "Return large lists in chunks rather than all at once. Pass 0 to disable.")
	po.print.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = fmt.Sprintf("Output format. One of: (wide, %s). Default: a table.", strings.Join(po.print.AllowedFormats(), ", "))
	return cmd
}

// validate rejects an output format no printer supports before anything is
// listed.
func (po *pendingOptions) validate() error {
	if isTable(*po.print.OutputFormat) {
		return nil
	}
	_, err := po.print.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: wide,%s",
			*po.print.OutputFormat, strings.Join(po.print.AllowedFormats(), ","))
	}
	return err
}
