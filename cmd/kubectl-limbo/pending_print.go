package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// isTable tells whether format is one of the human-readable tables, which
// cli-runtime's PrintFlags leave to the command (as kubectl get does).
func isTable(format string) bool {
	return format == "" || format == "wide"
}

// printPending prints items in the format of the flags: a table (wide with -o
// wide) through cli-runtime's table printer, TYPE/NAME lines with -o name, else
// the PendingList through the printer of -o (json, yaml, jsonpath, ...).
// Warnings (the items -o name leaves out) go to warnings.
func (po *pendingOptions) printPending(out, warnings io.Writer, items []pendingItem, now time.Time) error {
	format := *po.print.OutputFormat
	if isTable(format) {
		printer := printers.NewTablePrinter(printers.PrintOptions{
			NoHeaders:     po.noHeaders,
			Wide:          format == "wide",
			WithNamespace: po.allNamespaces,
		})
		return printer.PrintObj(pendingTable(items, now), out)
	}
	printer, err := po.print.ToPrinter()
	if err != nil {
		return err
	}
	if format == "name" {
		// The name printer prints one object at a time: the object in limbo
		// (or its Tombstone) as kind[.group]/name, ready for kubectl. kubectl
		// acts on this cluster, so an item in another cluster is left out: its
		// name here is another object's, or none.
		var elsewhere []string // the cluster of each item left out
		for i := range items {
			if items[i].Cluster != "" {
				elsewhere = append(elsewhere, items[i].Cluster)
				continue
			}
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: items[i].Namespace, Name: items[i].Name}}
			obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(items[i].APIVersion, items[i].Kind))
			if err := printer.PrintObj(obj, out); err != nil {
				return err
			}
		}
		warnLeftOut(warnings, elsewhere)
		warnNamespacesUnnamed(warnings, items)
		return nil
	}
	return printer.PrintObj(newPendingList(items, now), out)
}

// warnNamespacesUnnamed says on warnings that -o name named objects of several
// namespaces without their namespaces (-A): kubectl, given those names, acts
// in one namespace, and `| xargs kubectl delete` would delete objects of the
// current namespace's of the same names, not those in limbo.
func warnNamespacesUnnamed(warnings io.Writer, items []pendingItem) {
	namespaces := map[string]bool{}
	for _, it := range items {
		if it.Cluster == "" && it.Namespace != "" {
			namespaces[it.Namespace] = true
		}
	}
	if len(namespaces) > 1 {
		fmt.Fprintf(warnings, "Warning: the names are of %d namespaces and -o name prints no namespace: kubectl acts on them in one namespace; list one namespace (-n) to act on its names\n", len(namespaces))
	}
}

// warnLeftOut says on warnings how many items of other clusters -o name left
// out, and which clusters (clusters holds the cluster of each item).
func warnLeftOut(warnings io.Writer, clusters []string) {
	if len(clusters) == 0 {
		return
	}
	names := slices.Compact(slices.Sorted(slices.Values(clusters)))
	items, where, what, pronoun := "1 item", "another cluster", "its name for an object", "it"
	if len(clusters) > 1 {
		items, what, pronoun = fmt.Sprintf("%d items", len(clusters)), "their names for objects", "them"
	}
	if len(names) > 1 {
		where = "other clusters"
	}
	fmt.Fprintf(warnings, "Warning: -o name leaves out %s in %s (%s): kubectl would take %s of this cluster; the table and -o json list %s\n",
		items, where, strings.Join(names, ", "), what, pronoun)
}

// The columns of the table; priority 1 is shown by -o wide only.
var pendingColumns = []metav1.TableColumnDefinition{
	{Name: "Kind", Type: "string", Description: "The kind, with its API group unless core or limbo.dev."},
	{Name: "Name", Type: "string", Format: "name", Description: "The name of the object in limbo, or of the Tombstone of an external item."},
	{Name: "Bundle", Type: "string", Description: "The Bundle that managed it (label limbo.dev/bundle)."},
	{Name: "Delete-After", Type: "string", Description: "The deadline: limbo.dev/deletionTimestamp + limbo.dev/deletionDelay."},
	{Name: "Time-Left", Type: "string", Description: "Time to the deadline; due once it has come; deleting once the deletion runs."},
	{Name: "Delay", Type: "string", Priority: 1, Description: "The limbo.dev/deletionDelay annotation."},
	{Name: "In-Limbo", Type: "string", Priority: 1, Description: "Time since the countdown started (limbo.dev/deletionTimestamp)."},
	{Name: "Message", Type: "string", Description: "Why the item is special: an invalid delay or stamp, a Bundle's message, a Tombstone's item and last error."},
}

// pendingTable is items as a metav1.Table, the form kubectl prints tables in.
func pendingTable(items []pendingItem, now time.Time) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: pendingColumns}
	for i := range items {
		p := &items[i]
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []interface{}{kindColumn(p), p.Name, orNone(p.Bundle), deleteAfterColumn(p), timeLeftColumn(p, now),
				delayColumn(p), inLimboColumn(p, now), p.Message},
			// The object's metadata gives the NAMESPACE column of -A.
			Object: runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			}},
		})
	}
	return table
}

// delayColumn is the DELAY column: the object's limbo.dev/deletionDelay, <none>
// without one, <unknown> for a row known only from its Bundle's status (an item
// in another cluster, an orphan the Bundle holds before stamping it).
func delayColumn(p *pendingItem) string {
	if p.DeletionDelay == "" && p.delayUnknown {
		return "<unknown>"
	}
	return orNone(p.DeletionDelay)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// deleteAfterColumn is the DELETE-AFTER column: the deadline in RFC 3339 UTC.
func deleteAfterColumn(p *pendingItem) string {
	switch {
	case p.DeleteAfter != nil:
		return p.DeleteAfter.UTC().Format(time.RFC3339)
	case p.countdown == countdownUnknown:
		return "<unknown>"
	default:
		return "<none>"
	}
}

// timeLeftColumn is the TIME-LEFT column: the time until the deadline, "due"
// once it has come, "deleting" once the deletion runs.
func timeLeftColumn(p *pendingItem, now time.Time) string {
	switch {
	case p.countdown == countdownDeleting:
		return "deleting"
	case p.countdown == countdownNow:
		return "due"
	case p.countdown == countdownNever:
		return "never"
	case p.countdown == countdownHeld:
		return "held"
	case p.DeleteAfter == nil:
		return "<unknown>"
	}
	left := p.DeleteAfter.Sub(now)
	if left <= 0 {
		return "due"
	}
	return humanDuration(left)
}

// inLimboColumn is the IN-LIMBO column: how long ago the countdown started, as
// kubectl's AGE; 0s for a stamp ahead of this machine's clock (the controller's
// clock wrote it), where AGE would say "<invalid>". An expedited countdown
// started at its ExpeditedFrom, not at the stamp expedite moved back.
func inLimboColumn(p *pendingItem, now time.Time) string {
	start := p.DeletionTimestamp
	if p.ExpeditedFrom != "" {
		start = p.ExpeditedFrom
	}
	stamp, err := time.Parse(time.RFC3339, start)
	if err != nil {
		return "<unknown>"
	}
	return duration.HumanDuration(max(now.Sub(stamp), 0))
}

// humanDuration formats d as kubectl formats ages (duration.HumanDuration:
// 45s, 9m30s, 23h, 3d4h), rounded up to the second so that a deadline less
// than a second away is not shown as 0s.
func humanDuration(d time.Duration) string {
	if d > 0 {
		d = (d + time.Second - 1).Truncate(time.Second)
	}
	return duration.HumanDuration(d)
}

// kindColumn is the KIND column: Kind, or Kind.group for the kinds of API
// groups other than the core one and limbo.dev (Deployment.apps).
func kindColumn(p *pendingItem) string {
	gk := p.groupKind()
	if gk.Group == "" || gk.Group == limbov1alpha1.GroupVersion.Group {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// pendingListGVK is the type of the -o json|yaml output. The server does not
// serve it: it is the plugin's own report, typed so that kubectl's printers
// (json, yaml, jsonpath, go-template) print it.
var pendingListGVK = limbov1alpha1.GroupVersion.WithKind("PendingList")

// pendingList is the -o json|yaml output: the rows, with TIME-LEFT as of now.
type pendingList struct {
	metav1.TypeMeta `json:",inline"`
	Now             time.Time     `json:"now"`
	Items           []pendingItem `json:"items"`
}

func newPendingList(items []pendingItem, now time.Time) *pendingList {
	list := &pendingList{Now: now.UTC().Truncate(time.Second), Items: make([]pendingItem, len(items))}
	list.SetGroupVersionKind(pendingListGVK)
	for i := range items {
		list.Items[i] = items[i]
		list.Items[i].TimeLeft = timeLeftColumn(&items[i], now)
	}
	return list
}

// DeepCopyObject makes pendingList a runtime.Object.
func (l *pendingList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]pendingItem, len(l.Items))
	for i, item := range l.Items {
		if item.DeleteAfter != nil {
			t := *item.DeleteAfter
			item.DeleteAfter = &t
		}
		out.Items[i] = item
	}
	return &out
}
