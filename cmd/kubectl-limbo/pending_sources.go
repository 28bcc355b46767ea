package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/restmappings"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// pendingSources is what `pending` reads.
type pendingSources struct {
	// Reader lists Tombstones, Bundles and, metadata only, the labelled
	// objects of every kind.
	Reader client.Reader
	// Discovery tells which kinds there are.
	Discovery limboscan.Discovery
}

func newPendingSources(f clientFactory) (pendingSources, error) {
	c, err := f.Client()
	if err != nil {
		return pendingSources{}, err
	}
	d, err := f.ToDiscoveryClient()
	if err != nil {
		return pendingSources{}, err
	}
	// A resource type installed since the cache was written must not be
	// missed: what is in limbo has to be complete.
	d.Invalidate()
	return pendingSources{Reader: c, Discovery: d}, nil
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
	// countdownHeld: the item's countdown waits on something its message
	// names (the Bundle's other resources to be Ready).
	countdownHeld
	// countdownNever: the item is never deleted as it is (invalid delay).
	countdownNever
)

// pendingItem is one row of `pending`.
type pendingItem struct {
	Namespace  string `json:"namespace,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Bundle     string `json:"bundle,omitempty"`
	// Cluster is the cluster of an item in another cluster (deorbit's, in a
	// workload cluster), as the Bundle's status names it; empty for this one.
	Cluster           string     `json:"cluster,omitempty"`
	DeletionDelay     string     `json:"deletionDelay,omitempty"`
	DeletionTimestamp string     `json:"deletionTimestamp,omitempty"`
	DeleteAfter       *time.Time `json:"deleteAfter,omitempty"`
	// TimeLeft is the TIME-LEFT column; set when printed.
	TimeLeft string `json:"timeLeft"`
	Message  string `json:"message,omitempty"`

	uid       types.UID
	countdown countdown
	// delayUnknown marks a row made from a Bundle's status alone (its entry
	// names no delay): DELAY says <unknown>, not <none>.
	delayUnknown bool
	// object is the metadata of the object in limbo of an object row (nil for
	// the rows of Tombstones and of Bundles' entries).
	object *metav1.PartialObjectMetadata
}

func (p *pendingItem) groupKind() schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(p.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: p.Kind}
}

// addMessage adds msg to the item's message, unless it says it already; a msg
// that says all the message does and more (the controller's entry for an
// object whose row says the same, with what follows) replaces it.
func (p *pendingItem) addMessage(msg string) {
	if msg == "" || strings.Contains(p.Message, msg) {
		return
	}
	if p.Message != "" && strings.Contains(msg, p.Message) {
		p.Message = msg
		return
	}
	if p.Message != "" {
		p.Message += "; "
	}
	p.Message += msg
}

// itemKey identifies an item across the sources.
type itemKey struct {
	cluster   string
	gk        schema.GroupKind
	namespace string
	name      string
}

func (p *pendingItem) key() itemKey {
	return itemKey{p.Cluster, p.groupKind(), p.Namespace, p.Name}
}

// collectPending lists what is in limbo in namespace ("" is every namespace) at
// time now, soonest deletion first. Resource types that cannot be listed
// (Forbidden, NotFound, MethodNotSupported) are skipped; the Forbidden ones are
// named in a warning on warnings. With a namespace, every row is of that
// namespace (inNamespace): the rows a Bundle of the namespace reports in another
// are left out, with a warning.
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
		key := item.key()
		if _, ok := index[key]; ok {
			return
		}
		index[key] = len(items)
		items = append(items, item)
	}

	var bundles limbov1alpha1.BundleList
	if err := src.Reader.List(ctx, &bundles, client.InNamespace(namespace)); err != nil {
		if restmappings.NotServed(err) {
			return nil, fmt.Errorf("listing Bundles: %w (are limbo's CRDs installed?)", err)
		}
		return nil, fmt.Errorf("listing Bundles: %w", err)
	}
	tornDown := map[client.ObjectKey]bool{}
	for _, b := range bundles.Items {
		if !b.DeletionTimestamp.IsZero() {
			tornDown[client.ObjectKeyFromObject(&b)] = true
		}
	}

	// Tombstones first, so that they are shown with their item.
	var tombstones limbov1alpha1.TombstoneList
	if err := src.Reader.List(ctx, &tombstones, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Tombstones: %w", err)
	}
	for i := range tombstones.Items {
		ts := &tombstones.Items[i]
		item := tombstoneItem(ts, now)
		if tornDown[client.ObjectKey{Namespace: ts.Namespace, Name: item.Bundle}] {
			// The teardown cancels it (DESIGN §4: removing a cleanup job stops its
			// deletions), and the Tombstone controller does nothing meanwhile:
			// shown as due, it would read as about to be deleted.
			item.countdown, item.DeleteAfter = countdownHeld, nil
			item.addMessage("its Bundle is being deleted: the deletion is cancelled, the item kept")
		}
		add(item)
	}

	objects, err := listPendingObjects(ctx, src, namespace, now, warnings)
	if err != nil {
		return nil, err
	}
	for _, item := range objects {
		holdReleased(&item, bundles.Items, now)
		add(item)
	}

	var cut []string
	for _, bundle := range bundles.Items {
		if st := &bundle.Status; st.PendingDeletionsCut() {
			cut = append(cut, fmt.Sprintf("%s/%s (%d of %d)", bundle.Namespace, bundle.Name, len(st.PendingDeletions), st.PendingDeletionCount))
		}
		for _, entry := range bundle.Status.PendingDeletions {
			// An entry adds its message to its object's row; a cluster-scoped one (a
			// plugin's object item, a Csibmnode) is a row of its own: the label
			// listing covers namespaced kinds only.
			// One in another cluster (deorbit's, in a workload cluster) is a row of its
			// own too, saying which: the local listing cannot see it.
			if entry.Message == "" && entry.Namespace != "" && entry.Cluster == "" {
				continue
			}
			item := pendingItem{
				Namespace:    entryNamespace(&bundle, &entry),
				APIVersion:   entry.APIVersion,
				Kind:         entry.Kind,
				Name:         entry.Name,
				Bundle:       bundle.Name,
				Cluster:      entry.Cluster,
				countdown:    countdownHeld,
				delayUnknown: true,
			}
			if entry.InvalidDelay() {
				item.countdown = countdownNever
			}
			if entry.Cluster != "" {
				item.addMessage("in cluster " + entry.Cluster)
			} else if i, ok := index[item.key()]; ok {
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

	if len(cut) > 0 {
		// Objects of this cluster's namespaces are listed by their labels anyway;
		// what only a status tells (other clusters, cluster-scoped kinds, held
		// entries' reasons) is shown for the entries it lists.
		fmt.Fprintf(warnings, "Warning: the status of %s lists only the soonest of its entries in limbo; items of other clusters and cluster-scoped ones past them are not shown\n", strings.Join(cut, ", "))
	}
	items = inNamespace(items, namespace, warnings)
	sortPending(items)
	return items, nil
}

// inNamespace is items without the rows of namespaces other than namespace (""
// keeps all). Without -A the table has no NAMESPACE column, and kubectl takes the
// names -o name prints for objects of the namespace asked for: a row of another
// namespace, which a Bundle of this one reports (deorbit's items, say), would read
// as another object, and `| xargs kubectl delete -n NS` would hit it. The row of a
// cluster-scoped item is in its Bundle's namespace (entryNamespace), and stays. A
// warning on warnings says how many rows were left out, and where.
func inNamespace(items []pendingItem, namespace string, warnings io.Writer) []pendingItem {
	if namespace == "" {
		return items
	}
	kept := items[:0]
	var elsewhere []string
	for _, item := range items {
		if item.Namespace != namespace {
			elsewhere = append(elsewhere, item.Namespace)
			continue
		}
		kept = append(kept, item)
	}
	if len(elsewhere) > 0 {
		rows := "1 item"
		if len(elsewhere) > 1 {
			rows = fmt.Sprintf("%d items", len(elsewhere))
		}
		names := slices.Compact(slices.Sorted(slices.Values(elsewhere)))
		fmt.Fprintf(warnings, "Warning: not shown: %s that Bundles of namespace %s report in other namespaces (%s); kubectl limbo pending -A lists them\n",
			rows, namespace, strings.Join(names, ", "))
	}
	return kept
}

// holdReleased marks item, an object's row, held when the reaper holds the
// object (releasedHold: a Bundle of its namespace declares it), and says for
// which Bundle: its countdown, if any, is shown, but it is not deleted while the
// hold lasts. An invalid delay stays "never".
func holdReleased(item *pendingItem, bundles []limbov1alpha1.Bundle, now time.Time) {
	if item.object == nil || item.countdown == countdownNever {
		return
	}
	if h, ok := releasedHold(item.object, item.groupKind(), bundles, now); ok {
		item.countdown = countdownHeld
		item.addMessage("held by the reaper: " + h.Why)
	}
}

// listPendingObjects lists the objects labelled limbo.dev/pending-deletion=true
// of every namespaced, listable resource type, metadata only (package
// limboscan). Resource types that cannot be listed (Forbidden, NotFound,
// MethodNotSupported) are skipped; the Forbidden ones, and the API groups whose
// discovery failed, are named in a warning on warnings.
func listPendingObjects(ctx context.Context, src pendingSources, namespace string, now time.Time, warnings io.Writer) ([]pendingItem, error) {
	kinds, err := limboscan.Kinds(src.Discovery)
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

	type result struct {
		items     []pendingItem
		forbidden bool
		err       error
	}
	results := make([]result, len(kinds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			objects, err := limboscan.List(ctx, src.Reader, k.Kind, namespace, nil)
			switch {
			case apierrors.IsForbidden(err):
				results[i].forbidden = true
				return
			case apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
				return
			case err != nil:
				results[i].err = fmt.Errorf("listing %s: %w", k.Resource.GroupResource(), err)
				return
			}
			for j := range objects {
				results[i].items = append(results[i].items, objectItem(&objects[j], now))
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
			forbidden = append(forbidden, kinds[i].Resource.GroupResource().String())
		}
		items = append(items, res.items...)
	}
	if len(forbidden) > 0 {
		fmt.Fprintf(warnings, "Warning: not allowed to list %s; objects of these types in limbo are not shown\n", strings.Join(forbidden, ", "))
	}
	return items, nil
}

// objectItem is the row of an object in limbo.
func objectItem(obj *metav1.PartialObjectMetadata, now time.Time) pendingItem {
	item := pendingItem{
		Namespace:  obj.Namespace,
		APIVersion: obj.APIVersion,
		Kind:       obj.Kind,
		Name:       obj.Name,
		Bundle:     obj.Labels[limbov1alpha1.LabelBundle],
		uid:        obj.UID,
		object:     obj,
	}
	if bundle, _, ok := softdelete.SplitItemOwner(obj.Annotations[limbov1alpha1.AnnotationPluginResource]); item.Bundle == "" && ok {
		item.Bundle = bundle.Name // a plugin's object item
	}
	setCountdown(&item, obj, now)
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
	setCountdown(&item, t, now)
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
// `namespace-gc: StorageOSNamespace "shop on StorageOS http://storageos.kube-system:5705" (id 4f7c)`.
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

// setCountdown reads the deadline of obj, an item in limbo, with the engine's own
// state machine: the item is an orphan by definition.
func setCountdown(item *pendingItem, obj metav1.Object, now time.Time) {
	annotations := obj.GetAnnotations()
	delay, hasDelay := annotations[limbov1alpha1.AnnotationDeletionDelay]
	item.DeletionDelay = delay
	item.DeletionTimestamp = annotations[limbov1alpha1.AnnotationDeletionTimestamp]
	d := softdelete.Decide(now, softdelete.StateOf(obj, false))
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
// deadline (items without a delay have none: they come before every countdown,
// overdue ones included), then the items whose
// countdown is unknown, then those never deleted; ties by namespace, kind and
// name, so that the order is deterministic.
func sortPending(items []pendingItem) {
	rank := func(p *pendingItem) int {
		switch p.countdown {
		case countdownRunning, countdownNow:
			return 0
		case countdownUnknown, countdownHeld:
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
