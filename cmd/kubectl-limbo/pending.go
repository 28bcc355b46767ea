package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

const pendingExample = `  # What is in limbo in the current namespace, soonest deletion first
  kubectl limbo pending

  # ... in every namespace
  kubectl limbo pending -A

  # ... as JSON
  kubectl limbo pending -n team-a -o json`

func newPendingCommand(o *options) *cobra.Command {
	var allNamespaces bool
	var output string
	cmd := &cobra.Command{
		Use:   "pending [-A | -n NAMESPACE] [-o json|yaml]",
		Short: "List what is in limbo and when it is deleted",
		Long: `List what is in limbo, soonest deletion first: every object labelled
limbo.dev/pending-deletion=true (of any kind), every Tombstone (an external item
pending deletion), and the pending deletions that Bundles report with an error,
such as an invalid limbo.dev/deletionDelay (such an object is never deleted).

DELETE-AFTER is limbo.dev/deletionTimestamp + limbo.dev/deletionDelay; TIME-LEFT
is "due" once it has passed.`,
		Example: pendingExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("unsupported output format %q: use json or yaml, or no -o for a table", output)
			}
			namespace := ""
			if !allNamespaces {
				ns, err := o.clients.Namespace()
				if err != nil {
					return err
				}
				namespace = ns
			}
			src, err := newPendingSources(o.clients)
			if err != nil {
				return err
			}
			now := o.now()
			items, err := collectPending(cmd.Context(), src, namespace, now, o.ErrOut)
			if err != nil {
				return err
			}
			switch output {
			case "json", "yaml":
				return printPendingList(o.Out, output, items, now)
			}
			if len(items) == 0 {
				if allNamespaces {
					fmt.Fprintln(o.ErrOut, "Nothing in limbo.")
				} else {
					fmt.Fprintf(o.ErrOut, "Nothing in limbo in namespace %s.\n", namespace)
				}
				return nil
			}
			return printPendingTable(o.Out, items, now, allNamespaces)
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "List what is in limbo in every namespace.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml. Default: a table.")
	return cmd
}

// pendingSources is what `pending` reads.
type pendingSources struct {
	// Reader lists Tombstones and Bundles.
	Reader client.Reader
	// Metadata lists the labelled objects of every kind.
	Metadata metadata.Interface
	// Discovery tells which kinds there are.
	Discovery resourceDiscovery
}

func newPendingSources(f clientFactory) (pendingSources, error) {
	c, err := f.Client()
	if err != nil {
		return pendingSources{}, err
	}
	m, err := f.Metadata()
	if err != nil {
		return pendingSources{}, err
	}
	d, err := f.Discovery()
	if err != nil {
		return pendingSources{}, err
	}
	return pendingSources{Reader: c, Metadata: m, Discovery: d}, nil
}

// countdown says what is known of an item's deadline.
type countdown int

const (
	// countdownRunning: the item has a deadline (DeleteAfter).
	countdownRunning countdown = iota
	// countdownNow: the item has no delay; it is deleted as soon as the
	// controller sees it.
	countdownNow
	// countdownUnknown: the countdown has not started or restarts (no stamp or
	// an unparsable one).
	countdownUnknown
	// countdownNever: the item is never deleted as it is (invalid delay).
	countdownNever
)

// pendingItem is one row of `pending`.
type pendingItem struct {
	Namespace         string     `json:"namespace,omitempty"`
	APIVersion        string     `json:"apiVersion"`
	Kind              string     `json:"kind"`
	Name              string     `json:"name"`
	Bundle            string     `json:"bundle,omitempty"`
	DeletionDelay     string     `json:"deletionDelay,omitempty"`
	DeletionTimestamp string     `json:"deletionTimestamp,omitempty"`
	DeleteAfter       *time.Time `json:"deleteAfter,omitempty"`
	// TimeLeft is the TIME-LEFT column; set when printed.
	TimeLeft string `json:"timeLeft"`
	Message  string `json:"message,omitempty"`

	uid       types.UID
	countdown countdown
}

func (p *pendingItem) groupKind() schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(p.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: p.Kind}
}

func (p *pendingItem) addMessage(msg string) {
	if msg == "" || strings.Contains(p.Message, msg) {
		return
	}
	if p.Message != "" {
		p.Message += "; "
	}
	p.Message += msg
}

// itemKey identifies an item across the sources.
type itemKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

// collectPending lists what is in limbo in namespace ("" is every namespace) at
// time now, soonest deletion first. Resource types that cannot be listed
// (Forbidden, NotFound, MethodNotSupported) are skipped; the Forbidden ones are
// named in a warning on warnings.
func collectPending(ctx context.Context, src pendingSources, namespace string, now time.Time, warnings io.Writer) ([]pendingItem, error) {
	var items []pendingItem
	seen := map[types.UID]bool{}
	index := map[itemKey]int{}
	add := func(item pendingItem) {
		if item.uid != "" {
			if seen[item.uid] {
				return
			}
			seen[item.uid] = true
		}
		key := itemKey{item.groupKind(), item.Namespace, item.Name}
		if _, ok := index[key]; ok {
			return
		}
		index[key] = len(items)
		items = append(items, item)
	}

	// Tombstones first, so that they are shown with their item.
	var tombstones limbov1alpha1.TombstoneList
	if err := src.Reader.List(ctx, &tombstones, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("listing Tombstones: %w (are limbo's CRDs installed?)", err)
		}
		return nil, fmt.Errorf("listing Tombstones: %w", err)
	}
	for i := range tombstones.Items {
		add(tombstoneItem(&tombstones.Items[i], now))
	}

	objects, err := listPendingObjects(ctx, src, namespace, now, warnings)
	if err != nil {
		return nil, err
	}
	for _, item := range objects {
		add(item)
	}

	var bundles limbov1alpha1.BundleList
	if err := src.Reader.List(ctx, &bundles, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Bundles: %w", err)
	}
	for _, bundle := range bundles.Items {
		for _, entry := range bundle.Status.PendingDeletions {
			// An entry adds its message to its object's row; a cluster-scoped one (a
			// plugin's object item, a Csibmnode) is a row of its own: the label
			// listing covers namespaced kinds only.
			if entry.Message == "" && entry.Namespace != "" {
				continue
			}
			ns := entry.Namespace
			if ns == "" {
				ns = bundle.Namespace
			}
			item := pendingItem{
				Namespace:  ns,
				APIVersion: entry.APIVersion,
				Kind:       entry.Kind,
				Name:       entry.Name,
				Bundle:     bundle.Name,
				countdown:  countdownNever,
			}
			if i, ok := index[itemKey{item.groupKind(), item.Namespace, item.Name}]; ok {
				items[i].addMessage(entry.Message) // an empty message adds nothing
				continue
			}
			if entry.DeletionTimestamp != nil {
				item.DeletionTimestamp = softdelete.FormatStamp(entry.DeletionTimestamp.Time)
			}
			if entry.DeleteAfter != nil {
				t := entry.DeleteAfter.UTC()
				item.DeleteAfter = &t
				item.countdown = countdownRunning
			}
			item.addMessage(entry.Message)
			add(item)
		}
	}

	sortPending(items)
	return items, nil
}

// listPendingObjects lists the objects labelled limbo.dev/pending-deletion=true
// of every namespaced, listable resource type, metadata only.
func listPendingObjects(ctx context.Context, src pendingSources, namespace string, now time.Time, warnings io.Writer) ([]pendingItem, error) {
	resources, err := pendingResourceTypes(ctx, src.Discovery, warnings)
	if err != nil {
		return nil, err
	}
	selector := labels.Set{limbov1alpha1.LabelPendingDeletion: "true"}.String()

	type result struct {
		items     []pendingItem
		forbidden bool
		err       error
	}
	results := make([]result, len(resources))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, r := range resources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			list, err := src.Metadata.Resource(r.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			switch {
			case apierrors.IsForbidden(err):
				results[i].forbidden = true
				return
			case apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
				return
			case err != nil:
				results[i].err = fmt.Errorf("listing %s: %w", r.gvr.GroupResource(), err)
				return
			}
			for j := range list.Items {
				results[i].items = append(results[i].items, objectItem(&list.Items[j], r.gvr.GroupVersion().String(), r.kind, now))
			}
		}()
	}
	wg.Wait()

	var items []pendingItem
	var forbidden []string
	for i, res := range results {
		if res.err != nil {
			return nil, res.err
		}
		if res.forbidden {
			forbidden = append(forbidden, resources[i].gvr.GroupResource().String())
		}
		items = append(items, res.items...)
	}
	if len(forbidden) > 0 {
		fmt.Fprintf(warnings, "Warning: not allowed to list %s; objects of these types in limbo are not shown\n", strings.Join(forbidden, ", "))
	}
	return items, nil
}

type resourceType struct {
	gvr  schema.GroupVersionResource
	kind string
}

// pendingResourceTypes returns the namespaced resource types that support
// list, in their preferred version, sorted by group and resource. When some
// API groups cannot be discovered (an unavailable aggregated API), the others
// are used and a warning names the failed ones.
func pendingResourceTypes(ctx context.Context, d resourceDiscovery, warnings io.Writer) ([]resourceType, error) {
	lists, err := d.ServerPreferredNamespacedResourcesWithContext(ctx)
	if err != nil {
		var groupErr *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &groupErr) {
			return nil, fmt.Errorf("discovering resource types: %w", err)
		}
		failed := make([]string, 0, len(groupErr.Groups))
		for gv := range groupErr.Groups {
			failed = append(failed, gv.String())
		}
		sort.Strings(failed)
		fmt.Fprintf(warnings, "Warning: could not discover %s; objects of these API groups in limbo are not shown\n", strings.Join(failed, ", "))
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list"}}, lists)
	var types []resourceType
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !r.Namespaced || strings.Contains(r.Name, "/") {
				continue
			}
			types = append(types, resourceType{gvr: gv.WithResource(r.Name), kind: r.Kind})
		}
	}
	slices.SortFunc(types, func(a, b resourceType) int {
		return strings.Compare(a.gvr.String(), b.gvr.String())
	})
	return slices.CompactFunc(types, func(a, b resourceType) bool { return a.gvr == b.gvr }), nil
}

// objectItem is the row of an object in limbo.
func objectItem(obj *metav1.PartialObjectMetadata, apiVersion, kind string, now time.Time) pendingItem {
	item := pendingItem{
		Namespace:  obj.Namespace,
		APIVersion: apiVersion,
		Kind:       kind,
		Name:       obj.Name,
		Bundle:     obj.Labels[limbov1alpha1.LabelBundle],
		uid:        obj.UID,
	}
	if owner := obj.Annotations[limbov1alpha1.AnnotationPluginResource]; item.Bundle == "" && owner != "" {
		// A plugin's object item: "<namespace>/<bundle>/<resource>".
		if parts := strings.SplitN(owner, "/", 3); len(parts) == 3 {
			item.Bundle = parts[1]
		}
	}
	setCountdown(&item, obj.Annotations, now)
	return item
}

// tombstoneItem is the row of a Tombstone: its deadline, and in MESSAGE the
// external item it stands for and the last error of its hard delete.
func tombstoneItem(t *limbov1alpha1.Tombstone, now time.Time) pendingItem {
	item := pendingItem{
		Namespace:  t.Namespace,
		APIVersion: limbov1alpha1.GroupVersion.String(),
		Kind:       limbov1alpha1.TombstoneGVK.Kind,
		Name:       t.Name,
		Bundle:     t.Labels[limbov1alpha1.LabelBundle],
		uid:        t.UID,
	}
	item.addMessage(describeExternalItem(t))
	setCountdown(&item, t.Annotations, now)
	if item.countdown == countdownUnknown && t.Status.DeleteAfter != nil {
		deadline := t.Status.DeleteAfter.UTC()
		item.DeleteAfter = &deadline
		item.countdown = countdownRunning
	}
	if t.Status.LastError != "" {
		item.addMessage(fmt.Sprintf("last error (attempt %d): %s", t.Status.Attempts, t.Status.LastError))
	}
	return item
}

// describeExternalItem names the external item of a Tombstone, for example
// `namespace-gc: StorageOSNamespace "shop" (id 4f7c)`.
func describeExternalItem(t *limbov1alpha1.Tombstone) string {
	item := t.Spec.Item
	var b strings.Builder
	if t.Spec.Plugin != "" {
		b.WriteString(t.Spec.Plugin + ": ")
	}
	if item.Kind != "" {
		b.WriteString(item.Kind + " ")
	}
	switch {
	case item.Name != "" && item.ID != "" && item.Name != item.ID:
		fmt.Fprintf(&b, "%q (id %s)", item.Name, item.ID)
	case item.Name != "":
		fmt.Fprintf(&b, "%q", item.Name)
	case item.ID != "":
		fmt.Fprintf(&b, "id %s", item.ID)
	}
	return strings.TrimSpace(b.String())
}

// setCountdown reads the deadline of an item in limbo from its annotations,
// with the engine's own state machine: the item is an orphan by definition.
func setCountdown(item *pendingItem, annotations map[string]string, now time.Time) {
	delay, hasDelay := annotations[limbov1alpha1.AnnotationDeletionDelay]
	item.DeletionDelay = delay
	item.DeletionTimestamp = annotations[limbov1alpha1.AnnotationDeletionTimestamp]
	d := softdelete.Decide(now, softdelete.State{Annotations: annotations, PendingLabel: true})
	switch d.Action {
	case softdelete.ActionWait, softdelete.ActionDelete:
		if !hasDelay {
			item.countdown = countdownNow
			item.addMessage(fmt.Sprintf("no %s: deleted without delay", limbov1alpha1.AnnotationDeletionDelay))
			return
		}
		deadline := d.Deadline
		item.DeleteAfter = &deadline
		item.countdown = countdownRunning
	case softdelete.ActionInvalid:
		item.countdown = countdownNever
		item.addMessage(d.Err.Error())
	case softdelete.ActionStamp:
		item.countdown = countdownUnknown
		item.addMessage(fmt.Sprintf("no %s yet: the countdown of %s starts when the controller stamps it",
			limbov1alpha1.AnnotationDeletionTimestamp, delay))
	case softdelete.ActionRestamp:
		item.countdown = countdownUnknown
		item.addMessage(d.Err.Error())
	default:
		item.countdown = countdownUnknown
	}
}

// sortPending orders items soonest deletion first: running countdowns by
// deadline (items without a delay count as due now), then the items whose
// countdown is unknown, then those never deleted; ties by namespace, kind and
// name, so that the order is deterministic.
func sortPending(items []pendingItem) {
	rank := func(p *pendingItem) int {
		switch p.countdown {
		case countdownRunning, countdownNow:
			return 0
		case countdownUnknown:
			return 1
		default:
			return 2
		}
	}
	deadline := func(p *pendingItem) time.Time {
		if p.DeleteAfter == nil {
			return time.Time{}
		}
		return *p.DeleteAfter
	}
	slices.SortStableFunc(items, func(a, b pendingItem) int {
		if c := rank(&a) - rank(&b); c != 0 {
			return c
		}
		if c := deadline(&a).Compare(deadline(&b)); c != 0 {
			return c
		}
		for _, c := range []int{
			strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.Kind, b.Kind),
			strings.Compare(a.APIVersion, b.APIVersion),
			strings.Compare(a.Name, b.Name),
		} {
			if c != 0 {
				return c
			}
		}
		return 0
	})
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
// once it has come.
func timeLeftColumn(p *pendingItem, now time.Time) string {
	switch {
	case p.countdown == countdownNow:
		return "due"
	case p.countdown == countdownNever:
		return "never"
	case p.DeleteAfter == nil:
		return "<unknown>"
	}
	left := p.DeleteAfter.Sub(now)
	if left <= 0 {
		return "due"
	}
	return formatTimeLeft(left)
}

// formatTimeLeft formats a positive duration, rounded up to the second, with
// two units: 45s, 9m30s, 23h59m, 3d4h.
func formatTimeLeft(d time.Duration) string {
	seconds := int64((d + time.Second - 1) / time.Second)
	switch {
	case seconds < 60:
		return fmt.Sprintf("%ds", seconds)
	case seconds < 3600:
		return fmt.Sprintf("%dm%ds", seconds/60, seconds%60)
	case seconds < 48*3600:
		return fmt.Sprintf("%dh%dm", seconds/3600, seconds%3600/60)
	default:
		return fmt.Sprintf("%dd%dh", seconds/86400, seconds%86400/3600)
	}
}

// printPendingTable prints items as a table; with allNamespaces, the first
// column is NAMESPACE.
func printPendingTable(out io.Writer, items []pendingItem, now time.Time, allNamespaces bool) error {
	var buf bytes.Buffer
	w := printers.GetNewTabWriter(&buf)
	header := []string{"KIND", "NAME", "BUNDLE", "DELETE-AFTER", "TIME-LEFT", "MESSAGE"}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for i := range items {
		p := &items[i]
		bundle := p.Bundle
		if bundle == "" {
			bundle = "<none>"
		}
		row := []string{kindColumn(p), p.Name, bundle, deleteAfterColumn(p), timeLeftColumn(p, now), p.Message}
		if allNamespaces {
			row = append([]string{p.Namespace}, row...)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// An empty MESSAGE leaves the padding of TIME-LEFT at the end of the line.
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " \n")
		if strings.HasSuffix(line, "\n") {
			lines[i] += "\n"
		}
	}
	_, err := io.WriteString(out, strings.Join(lines, ""))
	return err
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

// pendingList is the -o json|yaml output.
type pendingList struct {
	Now   time.Time     `json:"now"`
	Items []pendingItem `json:"items"`
}

func printPendingList(out io.Writer, format string, items []pendingItem, now time.Time) error {
	list := pendingList{Now: now.UTC().Truncate(time.Second), Items: make([]pendingItem, len(items))}
	for i := range items {
		list.Items[i] = items[i]
		list.Items[i].TimeLeft = timeLeftColumn(&items[i], now)
	}
	var data []byte
	var err error
	if format == "yaml" {
		data, err = yaml.Marshal(list)
	} else {
		data, err = json.MarshalIndent(list, "", "    ")
		data = append(data, '\n')
	}
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}
