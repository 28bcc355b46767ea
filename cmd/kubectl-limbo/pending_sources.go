package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/fanout"
	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/listpages"
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
	// ChunkSize is the most objects one answer to a LIST holds (kubectl's
	// --chunk-size): each list is read page by page (listpages.Each), so that a
	// big cluster is not read in one answer. 0 reads each in one answer.
	ChunkSize int64
}

// listOptions are opts with the page size of ChunkSize.
func (s pendingSources) listOptions(opts ...client.ListOption) []client.ListOption {
	if s.ChunkSize > 0 {
		opts = append(opts, client.Limit(s.ChunkSize))
	}
	return opts
}

func newPendingSources(f clientFactory, chunkSize int64) (pendingSources, error) {
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
	return pendingSources{Reader: c, Discovery: d, ChunkSize: chunkSize}, nil
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
	// countdownDeleting: the item has a deletionTimestamp: its deletion runs
	// (a Tombstone's external delete, an object's finalizers), whatever its
	// countdown said.
	countdownDeleting
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
	Cluster           string `json:"cluster,omitempty"`
	DeletionDelay     string `json:"deletionDelay,omitempty"`
	DeletionTimestamp string `json:"deletionTimestamp,omitempty"`
	// ExpeditedFrom is the limbo.dev/expeditedFrom annotation of an expedited
	// item, when the countdown really started (countdownStart): IN-LIMBO counts
	// from it.
	ExpeditedFrom string     `json:"expeditedFrom,omitempty"`
	DeleteAfter   *time.Time `json:"deleteAfter,omitempty"`
	// TimeLeft is the TIME-LEFT column; set when printed.
	TimeLeft string `json:"timeLeft"`
	Message  string `json:"message,omitempty"`

	uid       types.UID
	countdown countdown
	// statusOnly marks a row made from a Bundle's status alone: no object of it
	// was listed (readStatusOnlyObjects reads it, for an object of this cluster).
	statusOnly bool
	// delayUnknown marks a row made from a Bundle's status alone (its entry
	// names no delay) whose object's delay was not read: DELAY says <unknown>,
	// not <none>.
	delayUnknown bool
	// labels are the labels of the object of a statusOnly row, once read
	// (labelsRead): what -l matches.
	labels     map[string]string
	labelsRead bool
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
	p.Message = joinMessages(p.Message, msg)
}

// msgSpecInvalid is the message of an orphan whose Bundle's spec is invalid.
const msgSpecInvalid = "not deleted while the Bundle's spec is invalid (see its Stalled condition)"

// specInvalid reports whether b's last pass found its spec invalid: it writes
// and deletes nothing of b's until the spec is fixed (DESIGN §2).
func specInvalid(b *limbov1alpha1.Bundle) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, limbov1alpha1.ConditionStalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == limbov1alpha1.ReasonInvalidSpec
}

// joinMessages is a and b, "; "-separated when both are set.
func joinMessages(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// hold marks the item held: something (its message says what) keeps it from
// being deleted, its countdown, if any, still shown in DELETE-AFTER. An invalid
// delay stays "never" (the hold ending would not delete it), an item being
// deleted "deleting" (no hold stops that).
func (p *pendingItem) hold() {
	if p.countdown != countdownNever && p.countdown != countdownDeleting {
		p.countdown = countdownHeld
	}
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
// time now, soonest deletion first: the objects and Tombstones that selector
// selects, by their labels, on the API server (a row that only a Bundle's status
// gives is selected by selectRows), and the rows of the Bundles' statuses. Resource types that cannot be listed
// (Forbidden, NotFound, MethodNotSupported) are skipped; the Forbidden ones are
// named in a warning on warnings.
//
// With a namespace, the rows are those -A shows in that namespace (the
// NAMESPACE column: the object's namespace, the reporting Bundle's for a
// cluster-scoped item), each as -A shows it: the Bundles of every namespace are
// read (bundlesFor), since a Bundle may report items of other namespaces (a
// plugin's: node-removal's in default, deorbit's in a workload cluster's
// namespaces), and its message belongs on their rows. What the Bundles of the
// namespace report in other namespaces is left out, with a warning (notShown).
// An error wrapping errIncomplete comes with the items that could be listed.
func collectPending(ctx context.Context, src pendingSources, namespace string, selector labels.Selector, now time.Time, warnings io.Writer) ([]pendingItem, error) {
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

	bundles, everyNamespace, err := listBundles(ctx, src, namespace)
	if err != nil {
		return nil, err
	}
	// A user who may not list every namespace's Bundles (a tenant) is not
	// warned at every run: what only another namespace's Bundle reports in
	// namespace without a labelled object there (an item in another cluster) is
	// rare, and the docs say it; the Bundles the objects listed name are read
	// one by one below, and one that cannot be read is named.
	tornDown := map[client.ObjectKey]types.UID{}
	for _, b := range bundles {
		if !b.DeletionTimestamp.IsZero() {
			tornDown[client.ObjectKeyFromObject(&b)] = b.UID
		}
	}

	// Tombstones first, so that they are shown with their item.
	err = listpages.Each(ctx, src.Reader, func() *limbov1alpha1.TombstoneList { return &limbov1alpha1.TombstoneList{} },
		func(tombstones *limbov1alpha1.TombstoneList) {
			for i := range tombstones.Items {
				ts := &tombstones.Items[i]
				item := tombstoneItem(ts, now)
				if _, torn := tornDown[client.ObjectKey{Namespace: ts.Namespace, Name: item.Bundle}]; torn {
					// The teardown cancels it (DESIGN §4: removing a cleanup job stops its
					// deletions), and the Tombstone controller does nothing meanwhile:
					// shown as due, it would read as about to be deleted.
					item.countdown, item.DeleteAfter = countdownHeld, nil
					item.addMessage(msgCancelledByTeardown)
				}
				add(item)
			}
		}, src.listOptions(client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector})...)
	if err != nil {
		return nil, fmt.Errorf("listing Tombstones: %w", err)
	}

	objects, incomplete := listPendingObjects(ctx, src, namespace, selector, now, warnings)
	if incomplete != nil && !errors.Is(incomplete, errIncomplete) {
		return nil, incomplete
	}
	if !everyNamespace {
		// The Bundles of other namespaces that report the objects listed (a
		// plugin's items: their limbo.dev/pluginResource names it) may still be
		// readable one by one.
		bundles = append(bundles, reportingBundles(ctx, src.Reader, namespace, objects, warnings)...)
	}
	indexed := indexBundles(bundles)
	for _, item := range objects {
		holdReleased(&item, indexed, now)
		holdUncontrolled(&item, indexed)
		tellTeardown(&item, indexed)
		add(item)
	}

	var cut []string
	notShown := map[itemKey]pendingItem{}
	for _, bundle := range bundles {
		concerns := namespace == "" || bundle.Namespace == namespace // namespace, which -n asks for
		frozen := specInvalid(&bundle)
		for _, entry := range bundle.Status.PendingDeletions {
			if ns := entryNamespace(&bundle, &entry); namespace != "" && ns != namespace {
				// -A lists it in its namespace; -n of that namespace too.
				if bundle.Namespace == namespace {
					item := pendingItem{Namespace: ns, APIVersion: entry.APIVersion, Kind: entry.Kind, Name: entry.Name, Cluster: entry.Cluster, statusOnly: true}
					notShown[item.key()] = item
				}
				continue
			}
			concerns = true
			// A Bundle being torn down decides nothing by its last pass's
			// holds: its teardown releases what it counts down, with the
			// countdown, to the reaper, which holds it or not (holdReleased),
			// and cancels its plugins' items and Tombstones.
			torn := !bundle.DeletionTimestamp.IsZero()
			held := entry.Held() && !torn
			if torn && entry.Held() {
				entry.Message = "" // the last pass's hold, which no longer holds
			}
			// What the teardown does with a Tombstone or a cluster-scoped
			// plugin item (the rows of others are their objects'): cancelled
			// holds nothing back but says so (cancelledWhy).
			cancelledWhy := ""
			switch {
			case !torn || entry.Cluster != "":
			case entryGroupKind(&entry) == limbov1alpha1.TombstoneGVK.GroupKind():
				cancelledWhy = msgCancelledByTeardown
			case entry.Namespace == "":
				cancelledWhy = teardownOfItem(&bundle, entry.Resource)
			}
			cancelled := cancelledWhy != ""
			if frozen && !torn && !entry.BeingDeleted() {
				// Its pass decides nothing until the spec is fixed: the entry is
				// the last one it wrote, due or not.
				entry.Message = joinMessages(entry.Message, msgSpecInvalid)
				held = true
			}
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
				statusOnly:   true,
				delayUnknown: true,
			}
			if entry.InvalidDelay() {
				item.countdown = countdownNever
			}
			if entry.Cluster != "" {
				item.addMessage("in cluster " + entry.Cluster)
			} else if i, ok := index[item.key()]; ok {
				items[i].addMessage(entry.Message) // an empty message adds nothing
				if held {
					// A stamped orphan its Bundle holds back: its deadline may have
					// come, but it is not deleted while the hold lasts.
					items[i].hold()
				}
				if cancelled {
					items[i].hold()
					items[i].addMessage(cancelledWhy)
				}
				continue
			}
			// The delay the controller found invalid, as the object's row would
			// show it (its limbo.dev/deletionDelay), where only the message says it.
			item.DeletionDelay, _ = softdelete.InvalidDelayValue(entry.Message)
			if entry.DeletionTimestamp != nil {
				item.DeletionTimestamp = softdelete.FormatStamp(entry.DeletionTimestamp.Time)
			}
			if entry.DeleteAfter != nil {
				t := entry.DeleteAfter.UTC()
				item.DeleteAfter = &t
				item.countdown = countdownRunning
			}
			switch {
			case entry.BeingDeleted():
				item.countdown = countdownDeleting // as markDeleting does for a row of the object
			case held:
				item.hold() // its deadline shown, not its countdown: the Bundle holds it
			case cancelled:
				// A Tombstone the teardown removed, a plugin's item it took out
				// of limbo: listed by the status until the Bundle is gone,
				// deleted by nothing.
				item.hold()
			}
			item.addMessage(entry.Message)
			if cancelled {
				item.addMessage(cancelledWhy)
			}
			add(item)
		}
		// A Bundle whose entries are all of other namespaces is not named: what
		// its status leaves out concerns namespace as little as what it lists.
		if st := &bundle.Status; st.PendingDeletionsCut() && concerns {
			cut = append(cut, fmt.Sprintf("%s/%s (%d of %d)", bundle.Namespace, bundle.Name, len(st.PendingDeletions), st.PendingDeletionCount))
		}
	}

	if len(cut) > 0 {
		// Objects of this cluster's namespaces are listed by their labels anyway;
		// what only a status tells (other clusters, cluster-scoped kinds, held
		// entries' reasons) is shown for the entries it lists.
		fmt.Fprintf(warnings, "Warning: the status of %s lists only the soonest of its entries in limbo; items of other clusters and cluster-scoped ones past them are not shown, nor its orphans held before their countdown or with an invalid delay, and the others' rows may not show their hold\n", strings.Join(cut, ", "))
	}
	warnNotShown(warnings, namespace, listedElsewhere(ctx, src.Reader, notShown, selector))
	sortPending(items)
	return items, incomplete
}

// entryGroupKind is the group and kind of the object of a pendingDeletions
// entry.
func entryGroupKind(entry *limbov1alpha1.PendingDeletion) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(entry.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: entry.Kind}
}

// listBundles lists the Bundles that may report what is in limbo in namespace
// ("" is every namespace): those of every namespace, since a Bundle may report
// items of other namespaces. everyNamespace is false when the user may not list
// them all but may list namespace's: bundles are then namespace's only.
func listBundles(ctx context.Context, src pendingSources, namespace string) (bundles []limbov1alpha1.Bundle, everyNamespace bool, err error) {
	bundles, err = readBundles(ctx, src.Reader, src.listOptions()...)
	if apierrors.IsForbidden(err) && namespace != "" {
		everyNamespace = false
		bundles, err = readBundles(ctx, src.Reader, src.listOptions(client.InNamespace(namespace))...)
	} else {
		everyNamespace = true
	}
	if err != nil {
		if restmappings.NotServed(err) {
			return nil, false, fmt.Errorf("listing Bundles: %w (are limbo's CRDs installed?)", err)
		}
		return nil, false, fmt.Errorf("listing Bundles: %w", err)
	}
	return bundles, everyNamespace, nil
}

// reportingBundles reads, one by one, the Bundles of namespaces other than
// namespace that report objects (reportingBundle: a plugin's items name theirs
// in limbo.dev/pluginResource), for a user who may not list the Bundles of
// every namespace. Those it cannot read are named in a warning on warnings:
// what they say of their items (a message) is not shown.
func reportingBundles(ctx context.Context, c client.Reader, namespace string, objects []pendingItem, warnings io.Writer) []limbov1alpha1.Bundle {
	reports := map[client.ObjectKey]int{} // items of namespace each reports
	var keys []client.ObjectKey
	for _, item := range objects {
		if item.object == nil {
			continue
		}
		key, ok := reportingBundle(item.object)
		if !ok || key.Namespace == namespace {
			continue
		}
		if reports[key] == 0 {
			keys = append(keys, key)
		}
		reports[key]++
	}
	var bundles []limbov1alpha1.Bundle
	for _, key := range keys {
		var b limbov1alpha1.Bundle
		err := c.Get(ctx, key, &b)
		switch {
		case err == nil:
			bundles = append(bundles, b)
		case apierrors.IsNotFound(err):
			// Gone: it reports nothing.
		default:
			what := "not allowed to get"
			if !apierrors.IsForbidden(err) {
				what = fmt.Sprintf("could not get (%v)", err)
			}
			fmt.Fprintf(warnings, "Warning: %s Bundle %s, which reports %s of namespace %s: what it says of them (a message, say) is not shown; kubectl limbo pending -n %s, by someone allowed, shows it\n",
				what, key, plural(reports[key], "item"), namespace, key.Namespace)
		}
	}
	return bundles
}

// listedElsewhere are the items of notShown (the Bundles of the namespace -n
// asks for report them in other namespaces, which it leaves out) that -A, or -n
// with their namespace, lists with selector (-l): all of them when selector is
// empty; else those whose object it selects by the labels read from the
// cluster, as selectRows selects a row only a Bundle's status gives (its object
// labelled in limbo or not: the row of a labelled one is selected by the same
// labels, on the API server). An item whose labels cannot be read (in another
// cluster, gone, not allowed) is left out by -l there too: it is not counted.
func listedElsewhere(ctx context.Context, r client.Reader, notShown map[itemKey]pendingItem, selector labels.Selector) []pendingItem {
	items := slices.Collect(maps.Values(notShown))
	if selector.Empty() {
		return items
	}
	readStatusOnlyObjects(ctx, r, items)
	return slices.DeleteFunc(items, func(p pendingItem) bool {
		return !p.labelsRead || !selector.Matches(labels.Set(p.labels))
	})
}

// warnNotShown says on warnings how many items the Bundles of namespace report
// in other namespaces that -n namespace leaves out, although -A or -n with their
// namespace lists them (listedElsewhere), and where they are: with or without
// a message, so whether the row of such an item comes from its labelled object
// or from the Bundle's status. Without -A the table has no NAMESPACE column,
// and kubectl takes the names -o name prints for objects of the namespace asked
// for: a row of another namespace would read as another object, and `| xargs
// kubectl delete -n NS` would hit it.
func warnNotShown(warnings io.Writer, namespace string, notShown []pendingItem) {
	if len(notShown) == 0 {
		return
	}
	var elsewhere []string
	for _, item := range notShown {
		elsewhere = append(elsewhere, item.Namespace)
	}
	items, pronoun := plural(len(notShown), "item"), "it"
	if len(notShown) > 1 {
		pronoun = "them"
	}
	names := slices.Compact(slices.Sorted(slices.Values(elsewhere)))
	where := "NAMESPACE"
	if len(names) == 1 {
		where = names[0]
	}
	fmt.Fprintf(warnings, "Warning: not shown: %s that Bundles of namespace %s report in other namespaces (%s); kubectl limbo pending -n %s, or -A, lists %s\n",
		items, namespace, strings.Join(names, ", "), where, pronoun)
}

// readStatusOnlyObjects reads the object of each row that only a Bundle's
// status gives, for objects of this cluster (metadata only): its labels, which
// -l matches (selectRows), and its DELAY (DeletionDelay): the entry names no
// delay, and the same limbo.dev/deletionDelay must read the same whichever
// source gives the row (an orphan never labelled, for an invalid delay, and a
// released object that is; a cluster-scoped item). A row whose object cannot be
// read (gone, not allowed, a kind not served) keeps what its entry tells: the
// invalid value its message quotes, else <unknown>, and no labels. Only the
// formats that show DELAY (-o wide, json, yaml, ...) and -l need it.
func readStatusOnlyObjects(ctx context.Context, c client.Reader, items []pendingItem) {
	var rows []*pendingItem
	for i := range items {
		if p := &items[i]; p.statusOnly && p.Cluster == "" {
			rows = append(rows, p)
		}
	}
	fanout.Each(concurrentReads, len(rows), func(i int) {
		p := rows[i]
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(p.APIVersion, p.Kind))
		// The namespace is ignored for a cluster-scoped kind (whose row is in
		// its Bundle's namespace).
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, obj); err != nil {
			return
		}
		p.labels, p.labelsRead = obj.GetLabels(), true
		annotations := obj.GetAnnotations()
		p.DeletionDelay, p.delayUnknown = annotations[limbov1alpha1.AnnotationDeletionDelay], false
		if p.DeletionTimestamp == "" {
			p.DeletionTimestamp = annotations[limbov1alpha1.AnnotationDeletionTimestamp]
		}
		if p.DeletionTimestamp == annotations[limbov1alpha1.AnnotationDeletionTimestamp] {
			setExpeditedFrom(p, annotations) // the entry's stamp is the object's
		}

	})
}

// concurrentReads bounds the requests kubectl limbo makes side by side: a LIST
// per kind, a GET per row only a Bundle's status gives.
const concurrentReads = 8

// selectRows keeps the rows of items whose object selector selects (-l), as
// kubectl get -l selects objects: by the labels of the object the row names,
// the object in limbo or the Tombstone. The rows of listed objects and
// Tombstones were selected by their LIST (collectPending); a row that only a
// Bundle's status gives is selected by its object's labels, read by
// readStatusOnlyObjects; not by the Bundle's, which are not the object's
// (`-o name | xargs kubectl delete` acts on the object). A row whose object's
// labels cannot be read (an item in another cluster; an object gone, or not
// allowed) cannot be told to match: it is left out, and a warning on warnings
// says how many.
func selectRows(items []pendingItem, selector labels.Selector, warnings io.Writer) []pendingItem {
	kept := items[:0]
	var elsewhere, unread int
	for _, p := range items {
		switch {
		case !p.statusOnly:
			kept = append(kept, p)
		case p.Cluster != "":
			elsewhere++
		case !p.labelsRead:
			unread++
		case selector.Matches(labels.Set(p.labels)):
			kept = append(kept, p)
		}
	}
	var left []string
	if elsewhere > 0 {
		left = append(left, plural(elsewhere, "item")+" in another cluster")
	}
	if unread > 0 {
		left = append(left, plural(unread, "item")+" whose object could not be read (gone, or not allowed)")
	}
	if len(left) > 0 {
		fmt.Fprintf(warnings, "Warning: -l leaves out %s, which only a Bundle's status reports: their labels cannot be matched; without -l they are listed\n",
			strings.Join(left, " and "))
	}
	return kept
}

// plural is n things: "1 item", "3 items".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// holdReleased marks item, an object's row, held when the reaper holds the
// object (releasedHold: a Bundle of its namespace declares it), and says for
// which Bundle: its countdown, if any, is shown, but it is not deleted while the
// hold lasts. An invalid delay stays "never"; an object being deleted stays
// "deleting": no hold stops that.
func holdReleased(item *pendingItem, bundles bundleIndex, now time.Time) {
	if item.object == nil || item.countdown == countdownNever || item.countdown == countdownDeleting {
		return // no hold to tell of: the hold ending would change nothing
	}
	if h, ok := releasedHold(item.object, item.groupKind(), bundles, now); ok {
		item.hold()
		item.addMessage("held by the reaper: " + h.Why)
	}
}

// msgCancelledByTeardown is the message of an item a Bundle's teardown
// cancels: a Tombstone, a plugin's item (DESIGN §4: removing a cleanup job
// stops its deletions).
const msgCancelledByTeardown = "its Bundle is being deleted: the deletion is cancelled, the item kept"

// tellTeardown tells, on the row of an object in limbo whose Bundle is being
// torn down, what the teardown does with it: a plugin's item it takes out of
// limbo (held: deleted by nothing); an orphan the Bundle still controls it
// releases to the reaper with its countdown (after the Bundle's plugin
// teardowns, deorbit's, which may take hours), or deletes at once if it has
// no delay. A released object is the reaper's already (holdReleased).
func tellTeardown(item *pendingItem, bundles bundleIndex) {
	obj := item.object
	if obj == nil || item.countdown == countdownDeleting || softdelete.Released(obj) {
		return
	}
	owner, resource, isItem := softdelete.SplitItemOwner(obj.Annotations[limbov1alpha1.AnnotationPluginResource])
	if isItem {
		if b := bundles.named(owner); b != nil && !b.DeletionTimestamp.IsZero() {
			if why := teardownOfItem(b, resource); why != "" {
				item.hold()
				item.addMessage(why)
			}
		}
		return
	}
	if controller := metav1.GetControllerOfNoCopy(obj); controller != nil && bundles.tornDown[controller.UID] {
		item.addMessage("its Bundle is being torn down: the teardown releases it to the reaper with this countdown, once the Bundle's plugin teardowns are done")
	}
}

// holdUncontrolled holds the row of an object in limbo that no Bundle decides
// (noBundleDecides). The Bundles of the object's namespace are all listed (a
// user who may not list every namespace's lists the namespace's, where the
// objects are).
func holdUncontrolled(item *pendingItem, bundles bundleIndex) {
	obj := item.object
	if obj == nil || item.countdown == countdownNever || item.countdown == countdownDeleting {
		return
	}
	named := bundles.named(client.ObjectKey{Namespace: obj.Namespace, Name: obj.Labels[limbov1alpha1.LabelBundle]})
	if why, held, undecided := noBundleDecides(obj, named); undecided {
		if held {
			item.hold()
		}
		item.addMessage(why)
	}
}

// noBundleDecides tells why no Bundle decides obj, an object in limbo, when
// none does: not released (the reaper's), not a plugin's item (its Bundle's by
// the annotation), and not controlled by named, the Bundle its label names in
// its namespace (nil: none), which alone decides it. A restore from a backup
// (Velero) drops owner references: a copy of an object its Bundle was counting
// down comes back stamped and controlled by nobody — nothing deletes it
// (held). An owner reference to an earlier Bundle of the name is the garbage
// collector's to act on: it deletes the object, whatever its countdown.
func noBundleDecides(obj metav1.Object, named *limbov1alpha1.Bundle) (why string, held, undecided bool) {
	label := obj.GetLabels()[limbov1alpha1.LabelBundle]
	if label == "" || softdelete.Released(obj) {
		return "", false, false // no Bundle's (its marks put by hand), or the reaper's
	}
	if _, _, isItem := softdelete.SplitItemOwner(obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]); isItem {
		return "", false, false
	}
	if named != nil && metav1.IsControlledBy(obj, named) {
		return "", false, false
	}
	switch owner := metav1.GetControllerOfNoCopy(obj); {
	case owner == nil:
		return "controlled by no Bundle (a restore from a backup drops owner references): nothing deletes it; declare it again in a Bundle, kubectl limbo cancel it, or delete it", true, true
	case owner.Kind == "Bundle" && owner.Name == label && strings.HasPrefix(owner.APIVersion, limbov1alpha1.GroupVersion.Group+"/"):
		return fmt.Sprintf("its owner reference names an earlier Bundle %s, gone: the garbage collector deletes it, whatever its countdown", label), false, true
	default:
		return fmt.Sprintf("controlled by %s %s, not by Bundle %s, which its label %s names: no Bundle deletes it", owner.Kind, owner.Name, label, limbov1alpha1.LabelBundle), true, true
	}
}

// teardownOfItem says what b's teardown does with an item of its plugin
// resource: "" when a plugin teardown (deorbit's) runs for the resource — its
// own item, deleted at its deadline; its progress is marked on b —, else why
// nothing deletes the item: that teardown ended (a deorbit that gave up leaves
// its leftovers stamped, its warning names them), or the teardown cancels the
// items of every other plugin resource.
func teardownOfItem(b *limbov1alpha1.Bundle, resource string) string {
	if resource == "" {
		return msgCancelledByTeardown
	}
	if warning, ended := limbov1alpha1.TeardownEnded(b.Annotations, resource); ended {
		why := fmt.Sprintf("the teardown of resource %q ended", resource)
		if warning != "" {
			why += " (" + warning + ")"
		}
		return why + ": nothing deletes it"
	}
	if _, running := b.Annotations[limbov1alpha1.AnnotationTeardownStatePrefix+resource]; running {
		return ""
	}
	return msgCancelledByTeardown
}

// errIncomplete marks a listing that left out the resource types whose LIST
// failed (a conversion webhook down, a timeout): what could be listed is
// printed, as kubectl get does, and the command then fails with it.
var errIncomplete = errors.New("the list above is incomplete")

// listPendingObjects lists the objects labelled limbo.dev/pending-deletion=true
// of every namespaced, listable resource type, metadata only (package
// limboscan). Resource types that cannot be listed (Forbidden, NotFound,
// MethodNotSupported) are skipped; the Forbidden ones, and the API groups whose
// discovery failed, are named in a warning on warnings. Those whose LIST fails
// otherwise are named in a warning too, and the error, with the items of the
// others, wraps errIncomplete.
func listPendingObjects(ctx context.Context, src pendingSources, namespace string, selector labels.Selector, now time.Time, warnings io.Writer) ([]pendingItem, error) {
	kinds, err := limboscan.Kinds(src.Discovery)
	if err != nil {
		groups, partial := limboscan.FailedGroups(err)
		if !partial {
			return nil, fmt.Errorf("discovering resource types: %w", err)
		}
		failed := make([]string, 0, len(groups))
		for _, gv := range groups {
			failed = append(failed, gv.String())
		}
		fmt.Fprintf(warnings, "Warning: could not discover %s; objects of these API groups in limbo are not shown\n", strings.Join(failed, ", "))
	}

	type result struct {
		items     []pendingItem
		forbidden bool
		err       error
	}
	results := make([]result, len(kinds))
	fanout.Each(concurrentReads, len(kinds), func(i int) {
		k := kinds[i]
		objects, err := limboscan.List(ctx, src.Reader, k.Kind, namespace, selector, src.listOptions()...)
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

	})

	var items []pendingItem
	var forbidden []string
	var failed []error
	for i, res := range results {
		if res.err != nil {
			failed = append(failed, res.err)
			fmt.Fprintf(warnings, "Warning: %v; objects of this type in limbo are not shown\n", res.err)
		}
		if res.forbidden {
			forbidden = append(forbidden, kinds[i].Resource.GroupResource().String())
		}
		items = append(items, res.items...)
	}
	if len(forbidden) > 0 {
		fmt.Fprintf(warnings, "Warning: not allowed to list %s; objects of these types in limbo are not shown\n", strings.Join(forbidden, ", "))
	}
	if len(failed) > 0 {
		return items, fmt.Errorf("%w: %d resource types could not be listed", errIncomplete, len(failed))
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
	markDeleting(&item, obj)
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
	markDeleting(&item, t)
	return item
}

// markDeleting marks item deleting when obj is being deleted (a Tombstone
// force-deleted, its external delete running; an object held by a finalizer):
// a countdown would read as time still left to cancel it. MESSAGE says so as
// the Bundle's entry for it does (softdelete.TerminatingMessage), so that the
// entry's message merged into the row adds nothing. DELETE-AFTER keeps the
// deadline, if any.
func markDeleting(item *pendingItem, obj metav1.Object) {
	if obj.GetDeletionTimestamp() == nil {
		return
	}
	item.countdown = countdownDeleting
	item.addMessage(softdelete.TerminatingMessage(obj))
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
	setExpeditedFrom(item, annotations)
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

// setExpeditedFrom sets item's ExpeditedFrom from the annotations of its
// object: its limbo.dev/expeditedFrom, while it tells when the countdown started
// (countdownStart).
func setExpeditedFrom(item *pendingItem, annotations map[string]string) {
	if start := countdownStart(annotations); start != annotations[limbov1alpha1.AnnotationDeletionTimestamp] {
		item.ExpeditedFrom = start
	}
}

// sortPending orders items soonest deletion first: running countdowns by
// deadline (items being deleted and items without a delay have none: they come
// before every countdown, overdue ones included), then the items whose
// countdown is unknown, then those never deleted; ties by namespace, kind and
// name, so that the order is deterministic.
func sortPending(items []pendingItem) {
	rank := func(p *pendingItem) int {
		switch p.countdown {
		case countdownRunning, countdownNow, countdownDeleting:
			return 0
		case countdownUnknown, countdownHeld:
			return 1
		default:
			return 2
		}
	}
	deadline := func(p *pendingItem) time.Time {
		if p.DeleteAfter == nil || p.countdown == countdownDeleting {
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
