package softdelete

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// HoldRecheckInterval is how soon a group of due items held by its plugin's gate,
// or by an item of a lower order that is still there, is looked at again: what
// holds them (a pod, a foreign finalizer) may be of a kind nobody watches.
const HoldRecheckInterval = 10 * time.Second

// Item is a Kubernetes object that a plugin inventories but does not own (a
// csi-baremetal custom resource, a PVC): a plugin's object item. Its countdown is
// recorded on the live object like any orphan's (deletionDelay and
// deletionTimestamp annotations, the pending-deletion label), plus
// limbo.dev/pluginResource naming the plugin resource; it never gets the
// limbo.dev/bundle label, so the reaper never acts on it. The plugin's latest
// inventory decides cancel, the deadline decides delete, both in its Bundle's pass
// (Engine.ProcessItems).
type Item struct {
	// Object is the live object, read from the API server (not a cache): its UID
	// and resourceVersion are the preconditions of every write and of the delete.
	// Its apiVersion and kind must be set.
	Object client.Object
	// Desired says the object should exist. An item that is not desired is an
	// orphan; a desired item in limbo is taken out (cancel).
	Desired bool
	// Group is the unit whose trouble stays its own (a node and its resources): the
	// delete order applies within a group, and the plugin's gate is asked per group.
	Group string
	// Order orders deletes within a group: a due orphan is deleted only once every
	// item of its group with a lower Order is gone.
	Order int
	// ClearFinalizers are removed from the object just before it is deleted, so
	// that it goes at once (their controllers went with the node). Other finalizers
	// are kept: the object then stays, terminating, in pendingDeletions until they
	// are removed by whoever owns them.
	ClearFinalizers []string
}

// ItemSet is the object items of one plugin resource, decided together.
type ItemSet struct {
	// Owner is "<namespace>/<bundle>/<resource>", written on every item in limbo
	// (limbo.dev/pluginResource). An item in limbo for another owner is left alone.
	Owner string
	// Delay is the resource's plugin.deletionDelay: it is written on each orphan
	// and decides its deadline. Empty deletes orphans at once (gate and order
	// still apply).
	Delay string
	// Items are the plugin's latest inventory of objects.
	Items []Item
	// Hold, when set, holds every orphan (the Bundle is not Ready): orphans are
	// listed, with Hold as their message, and none is stamped or deleted; cancels
	// still happen, and an item in limbo gets the resource's delay written.
	Hold string
	// MayDelete, when set, is asked once per group that has a due orphan whether
	// the group may be deleted now; a non-empty hold keeps the group's due orphans
	// and is their message.
	MayDelete func(ctx context.Context, group string) (hold string, err error)
	// Cluster, when set, is the cluster the items live in when it is not the
	// engine's own (a plugin acting on a workload cluster).
	Cluster *Cluster
	// LeaveBundlesObjects leaves the objects a Bundle manages (bundleManaging)
	// of the engine's own cluster to their Bundle: set for a plan's items,
	// which the plugin judges against a desired side. A teardown's, unset,
	// deletes what it lists (deorbit aimed at limbo's own cluster: every
	// claim and load balancer) but the objects of a Bundle that lives on
	// (bundleLives).
	LeaveBundlesObjects bool
	// NotBefore, when set, is an instant no countdown of Owner's ends before:
	// the start of what decides the items (a Bundle's creation, its teardown).
	// Owner names a Bundle by name only, and stamps stay on items a Bundle left
	// behind (a teardown that gave up): an item whose deadline, its stamp plus
	// Delay, is earlier was stamped for an earlier Bundle of the same name, and
	// is decided as if it had no stamp: stamped again, never due at once. The
	// deadline is compared, not the stamp, since `kubectl limbo expedite` sets
	// a stamp back by the delay, to make the deadline its countdown's start.
	// The engine never stamps an item earlier than NotBefore (a clock behind the
	// API server's that wrote it).
	NotBefore time.Time
	// CountFrom, when set, is the instant every countdown of the set runs from:
	// an item without a stamp is stamped then, not when it is first listed. A
	// teardown's delay runs from the Bundle's deletion ("grace between the
	// teardown's start and the deletions", DESIGN §5), however late an item is
	// first listed — its cluster unreachable, or the controller down, for a while
	// — so that deorbit's timeout, which runs from the deletion too, does not
	// end before the items are due. A malformed stamp is stamped anew at now.
	CountFrom time.Time
}

// Cluster is another cluster that object items live in.
type Cluster struct {
	// Name names the cluster in pendingDeletions entries (their `cluster`), events
	// and logs: the kubeconfig Secret that reaches it.
	Name string
	// Client reads from and writes to that cluster's API server directly: every
	// stamp, cancel and delete of its items goes through it.
	Client client.Client
}

// client is the client that writes the set's items.
func (s ItemSet) client(e *Engine) client.Client {
	if s.Cluster != nil {
		return s.Cluster.Client
	}
	return e.Client
}

// reader reads the set's items back from their API server.
func (s ItemSet) reader(e *Engine) client.Reader {
	if s.Cluster != nil {
		return s.Cluster.Client
	}
	return e.Reader
}

// ref names obj in events and messages, with its cluster when it is not this one.
func (s ItemSet) ref(obj client.Object) string {
	if s.Cluster != nil {
		return describe(obj) + " in cluster " + s.Cluster.Name
	}
	return describe(obj)
}

// auditKeys are the audit trail's keys of obj, an item of s, beyond an object's:
// its plugin resource (the last part of its owner, "<namespace>/<bundle>/<resource>")
// and, when it is not this one, its cluster.
func (s ItemSet) auditKeys(obj client.Object) []any {
	owner := s.Owner
	if owner == "" {
		owner = obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]
	}
	resource := owner // not of the usual form (edited by hand): as it is
	if _, name, ok := SplitItemOwner(owner); ok {
		resource = name
	}
	kv := []any{"resource", resource}
	if s.Cluster != nil {
		kv = append(kv, "cluster", s.Cluster.Name)
	}
	return kv
}

// ItemOwner is the owner of the items of Bundle b's plugin resource (ItemSet.Owner,
// the limbo.dev/pluginResource annotation): "<namespace>/<bundle>/<resource>".
func ItemOwner(b client.ObjectKey, resource string) string {
	return b.Namespace + "/" + b.Name + "/" + resource
}

// SplitItemOwner splits an item's owner (ItemSet.Owner, the
// limbo.dev/pluginResource annotation), "<namespace>/<bundle>/<resource>", into
// its Bundle and resource; ok is false for a value of another form.
func SplitItemOwner(owner string) (bundle client.ObjectKey, resource string, ok bool) {
	parts := strings.SplitN(owner, "/", 3)
	if len(parts) != 3 {
		return client.ObjectKey{}, "", false
	}
	return client.ObjectKey{Namespace: parts[0], Name: parts[1]}, parts[2], true
}

// subject is obj, an item of s, as the engine writes to it and reports about it:
// through s's cluster's client, named with that cluster, stamped with s's delay
// and owner, and audited with s's keys (taken now, before a write can change
// them).
func (s ItemSet) subject(e *Engine, eventTarget runtime.Object, obj client.Object) subject {
	keys := s.auditKeys(obj)
	return subject{obj: obj, client: s.client(e), reader: s.reader(e), ref: s.ref(obj),
		stampAnnotations: map[string]any{
			limbov1alpha1.AnnotationDeletionDelay:  s.delayValue(),
			limbov1alpha1.AnnotationPluginResource: s.Owner,
		},
		audit: func(ctx context.Context, msg string, deadline time.Time, extra ...any) {
			auditLog(ctx, eventTarget, obj, msg, deadline, slices.Concat(keys, extra)...)
		}}
}

// delayValue is the limbo.dev/deletionDelay a merge patch writes on an item of
// s: the resource's delay, or null (the annotation goes) when it has none, as
// an empty one is invalid.
func (s ItemSet) delayValue() any {
	if s.Delay == "" {
		return nil
	}
	return s.Delay
}

// pending is obj's pendingDeletions entry, naming its cluster.
func (s ItemSet) pending(p *limbov1alpha1.PendingDeletion) limbov1alpha1.PendingDeletion {
	if s.Cluster != nil {
		p.Cluster = s.Cluster.Name
	}
	return *p
}

// ItemsOutcome is what processing an ItemSet did.
type ItemsOutcome struct {
	// Pending are the entries of status.pendingDeletions for the orphans that
	// still exist.
	Pending []limbov1alpha1.PendingDeletion
	// WakeAt is when the caller must come back (the earliest deadline or hold
	// recheck), an instant for the reason Outcome.WakeAt is; zero: no need.
	WakeAt time.Time
	// ReadAgain reports that an item changed since it was read (a write or
	// delete met a Conflict), or that items were left untouched because the
	// context was done (MsgItemsDeferred): the caller reads the items again
	// soon and decides again. It is kept apart from WakeAt, which stays the earliest
	// deadline of the other items: folded into it as "come back at once", it
	// made the caller take a retry for a deadline, and a pass that also failed
	// then had no deadline left to keep (up to the work queue's backoff late).
	ReadAgain bool
	// Err joins the failed writes and deletes; the caller retries.
	Err error
	// Remaining counts the set's orphans still there: those it counts down,
	// holds or could not act on — not the items left to another owner or to a
	// Bundle (LeaveBundlesObjects), which are no countdown of the set's.
	Remaining int
}

// at asks to come back at t (the earliest request wins).
func (o *ItemsOutcome) at(t time.Time) { o.WakeAt = Earliest(o.WakeAt, t) }

// Earliest is the earlier of two instants to come back at, a zero time being
// none (Outcome.WakeAt).
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func (o *ItemsOutcome) fail(err error) { o.Err = errors.Join(o.Err, err) }

// follow records what an item's Outcome asks of the caller: a failure, a read
// again (it changed since it was read), or a time to come back. It reports
// whether the Outcome asked any of these.
func (o *ItemsOutcome) follow(item Outcome) bool {
	switch {
	case item.Err != nil:
		o.fail(item.Err)
	case item.ReadAgain:
		o.ReadAgain = true
	case !item.WakeAt.IsZero():
		o.at(item.WakeAt)
	default:
		return false
	}
	return true
}

// wrote records the outcome of a write on an item as it was read: a Conflict (it
// changed since) or NotFound (it was deleted since) means read and decide again,
// at once, and is no error. It reports whether the write failed otherwise.
func (o *ItemsOutcome) wrote(err error) (failed bool) {
	switch {
	case apiconflict.Is(err), apierrors.IsNotFound(err):
		o.ReadAgain = true
		return false
	case err != nil:
		o.fail(err)
		return true
	}
	return false
}

// decidedItem is an item with the state machine's decision.
type decidedItem struct {
	Item
	d Decision
	// at is the instant d was decided at, which d.RequeueAfter counts from.
	at time.Time
}

// ProcessItems runs the state machine for each of a plugin resource's object
// items and applies its decisions: desired items in limbo are cancelled; orphans
// are stamped, waited for, and deleted at their deadline — group by group, in
// Order, once the gate allows, with UID and resourceVersion preconditions.
// Events go to eventTarget (the Bundle).
func (e *Engine) ProcessItems(ctx context.Context, eventTarget runtime.Object, set ItemSet) ItemsOutcome {
	now := e.Clock.Now()
	var out ItemsOutcome
	groups := map[string][]decidedItem{}
	ownersGone := map[client.ObjectKey]bool{}
	live := map[client.ObjectKey]bool{}
	for _, it := range set.Items {
		if b := bundleManaging(it.Object); b != "" && set.Cluster == nil && (set.LeaveBundlesObjects || e.bundleLives(ctx, client.ObjectKey{Namespace: it.Object.GetNamespace(), Name: b}, live)) {
			// No entry: the object is in no limbo of the set's (listed, it
			// read as one in kubectl limbo pending, under the wrong Bundle).
			log.FromContext(ctx).V(1).Info("left to the Bundle that manages it: not a plugin's item", "object", describe(it.Object), "bundle", b)
			continue
		}
		if owner := it.Object.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]; owner != "" && owner != set.Owner && !e.ownerGone(ctx, eventTarget, owner, ownersGone) {
			if !it.Desired {
				p := pendingEntry(it.Object, Decide(now, StateOf(it.Object, false)), nil)
				p.Message = "in limbo for plugin resource " + owner + MsgLeftToOwner
				out.Pending = append(out.Pending, set.pending(p))
			}
			continue
		}
		d := set.Decide(now, it)
		switch d.Action {
		case ActionNone:
		case ActionCancel:
			if ctx.Err() != nil {
				out.ReadAgain = true // cancelled by the next pass (MsgItemsDeferred)
				continue
			}
			out.wrote(e.cancelItem(ctx, eventTarget, set, it.Object, "desired again"))
		default:
			groups[it.Group] = append(groups[it.Group], decidedItem{Item: it, d: d, at: now})
		}
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.Sort(names)
	for _, g := range names {
		e.processGroup(ctx, eventTarget, set, g, groups[g], &out)
	}
	return out
}

// bundleManaging is the Bundle that manages obj, an object of the engine's own
// cluster: the one its limbo.dev/bundle label names, or its controller if that
// is a Bundle; "" for none. Such an object is never a plugin's item, whatever
// the plugin's inventory says: a plugin whose listing covers the namespace
// (every PVC a Pod mounts) would cancel its Bundle's countdown, and its delay
// with it (the next pass deleted it at once), or stamp it with the resource's
// delay instead of its own. A released object keeps the label: the reaper's.
func bundleManaging(obj metav1.Object) string {
	if b := obj.GetLabels()[limbov1alpha1.LabelBundle]; b != "" {
		return b
	}
	if c := BundleControllerOf(obj); c != nil {
		return c.Name
	}
	return ""
}

// bundleLives reports whether the Bundle key exists and is not being deleted,
// as the API server tells (memo keeps the answers of one ProcessItems); a read
// that fails says it does (the safe side: its objects are left to it). A
// teardown's items (deorbit aimed at limbo's own cluster) are deleted whoever
// manages them, but for a Bundle that lives on: stamped, its pass cancelled the
// countdown, the teardown stamped again, until deorbit gave up; without a
// delay, the Bundle made the object again, and the teardown deleted it again.
func (e *Engine) bundleLives(ctx context.Context, key client.ObjectKey, memo map[client.ObjectKey]bool) bool {
	if lives, asked := memo[key]; asked {
		return lives
	}
	b := &metav1.PartialObjectMetadata{}
	b.SetGroupVersionKind(limbov1alpha1.BundleGVK)
	err := e.Reader.Get(ctx, key, b)
	memo[key] = !apierrors.IsNotFound(err) && (err != nil || b.DeletionTimestamp == nil)
	return memo[key]
}

// ownerGone reports whether owner, an item's limbo.dev/pluginResource naming
// another plugin resource than the set's, names a Bundle that no longer exists,
// as the API server tells (memo keeps the answers of one ProcessItems). Such an
// item is the set's to decide, as one without an owner is: its owner's
// teardown did not take it out of limbo (its cancel refused, its finalizer
// removed by hand, its namespace deleted), and left to it, it stayed marked in
// limbo for good — never deleted, never cancelled, a node that came back listed
// as pending deletion. Its countdown starts again (State): the gone owner's
// stamp is not this resource's. A read that fails, or an owner of another form,
// leaves the item to its owner (the safe side: nothing is deleted). An owner
// that is eventTarget, the Bundle being processed, or that was there a moment
// ago (Engine.ownersThere) is not read again: a sibling's items, seen at every
// pass of their countdown, would cost a read each pass.
func (e *Engine) ownerGone(ctx context.Context, eventTarget runtime.Object, owner string, memo map[client.ObjectKey]bool) bool {
	key, _, ok := SplitItemOwner(owner)
	if !ok {
		return false
	}
	if target, isObject := eventTarget.(client.Object); isObject && client.ObjectKeyFromObject(target) == key {
		return false
	}
	now := e.Clock.Now()
	if gone, asked := memo[key]; asked {
		return gone
	}
	if e.ownersThere.has(key, now) {
		return false
	}
	b := &metav1.PartialObjectMetadata{}
	b.SetGroupVersionKind(limbov1alpha1.BundleGVK)
	err := e.Reader.Get(ctx, key, b)
	if err == nil {
		e.ownersThere.add(key, now)
	}
	memo[key] = apierrors.IsNotFound(err)
	return memo[key]
}

// processGroup decides one group's orphans: the gate is asked once if some are
// due, and deletes go in Order.
func (e *Engine) processGroup(ctx context.Context, eventTarget runtime.Object, set ItemSet, group string, items []decidedItem, out *ItemsOutcome) {
	slices.SortStableFunc(items, func(a, b decidedItem) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(describe(a.Object), describe(b.Object)))
	})
	hold := set.Hold
	if hold == "" && set.MayDelete != nil && ctx.Err() == nil && slices.ContainsFunc(items, func(x decidedItem) bool { return x.d.Action == ActionDelete }) {
		// (With the context done, every item is left for the next pass below:
		// the gate is not asked then, its answer would be an error.)
		h, err := set.MayDelete(ctx, group)
		switch {
		case err != nil:
			hold = "cannot tell whether it may be deleted: " + err.Error()
			out.fail(err)
		case h != "":
			hold = h
			out.at(e.Clock.Now().Add(HoldRecheckInterval))
		}
	}
	var lower, level []string // items of lower orders, and of the current order, still there
	for i, x := range items {
		if i > 0 && x.Order != items[i-1].Order {
			lower, level = append(lower, level...), nil
		}
		if ctx.Err() != nil {
			// The caller's time for items ran out (or it stops): what is left
			// is decided again by the next pass, untouched meanwhile.
			out.Pending = append(out.Pending, set.pending(heldEntry(x.Object, x.d, MsgItemsDeferred)))
			out.ReadAgain = true
			level = append(level, set.ref(x.Object))
			out.Remaining++
			continue
		}
		if !e.processOrphanItem(ctx, eventTarget, set, x, hold, lower, out) {
			level = append(level, set.ref(x.Object))
			out.Remaining++
		}
	}
}

// MsgLeftToOwner ends the entry of an item in limbo for another plugin
// resource, which ProcessItems leaves to it: its countdown is not the set's.
const MsgLeftToOwner = "; left to it"

// MsgItemsDeferred is the pendingDeletions message of an item that a pass left
// for the next one: ProcessItems stops acting once its context is done, so that
// a backend whose writes hang (a dying cluster's admission webhook) holds a
// worker for the caller's budget, not for every item's timeout in turn.
const MsgItemsDeferred = "not acted on yet: the pass's time for items ran out; the next pass goes on"

// processOrphanItem applies the decision about one orphan and reports whether it
// is gone. hold keeps a due orphan (the gate, or the Bundle not Ready); lower
// lists items of its group that must be gone first.
func (e *Engine) processOrphanItem(ctx context.Context, eventTarget runtime.Object, set ItemSet, x decidedItem, hold string, lower []string, out *ItemsOutcome) bool {
	obj, d, sub := x.Object, x.d, set.subject(e, eventTarget, x.Object)
	var err error
	counting := d.Action == ActionWait || d.Action == ActionDelete
	deletingNow := d.Action == ActionDelete && set.Hold == "" && hold == "" && len(lower) == 0
	if counting && !deletingNow && obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay] != set.Delay {
		// The resource's delay changed: the item says the delay its countdown
		// runs with, held or not, which `kubectl limbo pending` and `expedite`
		// read. (An item deleted now is not written first.)
		err = patchWith(ctx, sub.client, obj, map[string]any{"metadata": map[string]any{
			"annotations":     map[string]any{limbov1alpha1.AnnotationDeletionDelay: set.delayValue()},
			"resourceVersion": obj.GetResourceVersion(),
		}})
		if !out.wrote(err) {
			err = nil // a Conflict is no failure to list: the item is read again
		}
	}
	if set.Hold != "" {
		out.Pending = append(out.Pending, set.pending(heldEntry(obj, d, set.Hold)))
		return false
	}
	switch d.Action {
	case ActionStamp, ActionRestamp:
		o := e.stamp(ctx, eventTarget, sub, d, x.at)
		out.follow(o)
		if o.Err != nil {
			err = o.Err
		}
	case ActionWait:
		out.at(x.at.Add(d.RequeueAfter))
	case ActionDelete:
		p := pendingEntry(obj, d, nil)
		switch {
		case hold != "":
			p.Message = limbov1alpha1.PendingMessageDueHeld + hold
		case len(lower) > 0:
			p.Message = "due; waiting for " + strings.Join(lower, ", ") + " to be deleted first"
			out.at(e.Clock.Now().Add(HoldRecheckInterval))
		default:
			o := e.deleteItem(ctx, eventTarget, sub, x.Item, d)
			if o.Gone {
				return true
			}
			if !out.follow(o) {
				// Terminating: what holds it may be of a kind nobody watches.
				out.at(e.Clock.Now().Add(HoldRecheckInterval))
			}
			p = o.Pending
		}
		out.Pending = append(out.Pending, set.pending(p))
		return false
	}
	out.Pending = append(out.Pending, set.pending(pendingEntry(obj, d, err)))
	return false
}

// State is what Decide reads of it, an item of s: its live annotations with the
// resource's delay in place of the object's own.
func (s ItemSet) State(it Item) State {
	st := StateOf(it.Object, it.Desired)
	ann := make(map[string]string, len(st.Annotations)+1)
	for k, v := range st.Annotations {
		ann[k] = v
	}
	// The resource's delay decides, whatever the item's own says: none deletes
	// it at once (an own delay kept decided a countdown whose stamp wrote an
	// empty delay, invalid at the next pass: never deleted).
	if s.Delay != "" {
		ann[limbov1alpha1.AnnotationDeletionDelay] = s.Delay
	} else {
		delete(ann, limbov1alpha1.AnnotationDeletionDelay)
	}
	// A countdown of another owner (one gone: ProcessItems) is not s's: the
	// item is stamped anew, with s's owner.
	if owner := ann[limbov1alpha1.AnnotationPluginResource]; owner != "" && owner != s.Owner {
		delete(ann, limbov1alpha1.AnnotationDeletionTimestamp)
	}
	st.Annotations = ann
	// An item's countdown may rightly end before the item was made when a
	// teardown counts it from the Bundle's deletion (CountFrom). Otherwise
	// the copy rule holds for items too: a csi-baremetal Volume restored from
	// a backup with its old, long-due stamp was deleted at once.
	if !s.CountFrom.IsZero() {
		st.Created = time.Time{}
	}
	return st
}

// Decide is what ProcessItems decides about it, an item of s, at now: Decide on
// its State, but a countdown whose deadline came before s.NotBefore (to the
// second, as stamps are) is an earlier owner's, and the item is decided as if
// it had no stamp; and a new countdown starts at s.NotBefore at the earliest, so
// that a clock behind the one that set NotBefore does not write a stamp the next
// pass would take for an earlier owner's.
func (s ItemSet) Decide(now time.Time, it Item) Decision {
	st := s.State(it)
	d := Decide(now, st)
	if s.NotBefore.IsZero() && s.CountFrom.IsZero() {
		return d
	}
	start := truncateStamp(s.NotBefore)
	if (d.Action == ActionWait || d.Action == ActionDelete) && !d.Deadline.IsZero() && d.Deadline.Before(start) {
		delete(st.Annotations, limbov1alpha1.AnnotationDeletionTimestamp)
		d = Decide(now, st)
	}
	stampAt := func(t time.Time) {
		d.Stamp, d.Deadline = t, t.Add(d.Delay)
		d.RequeueAfter = max(d.Deadline.Sub(now), 0)
	}
	if from := truncateStamp(s.CountFrom); d.Action == ActionStamp && !s.CountFrom.IsZero() && from.Before(d.Stamp) {
		stampAt(from)
	}
	if (d.Action == ActionStamp || d.Action == ActionRestamp) && d.Stamp.Before(start) {
		stampAt(start)
	}
	return d
}

// CancelItem takes a plugin's object item out of limbo: every limbo mark and
// note (OutOfLimboPatch), the delay and the owner go (the object is not limbo's:
// nothing of limbo's is left on it). An object already gone is success.
func (e *Engine) CancelItem(ctx context.Context, eventTarget runtime.Object, obj client.Object, why string) error {
	return e.cancelItem(ctx, eventTarget, ItemSet{}, obj, why)
}

// cancelItem is CancelItem of an item of set, in set's cluster.
//
// The patch is OutOfLimboPatch's (the owner, limbo.dev/pluginResource, is one
// of its notes), plus the delay, which the engine wrote on the item too.
func (e *Engine) cancelItem(ctx context.Context, eventTarget runtime.Object, set ItemSet, obj client.Object, why string) error {
	sub := set.subject(e, eventTarget, obj)
	metadata := OutOfLimboPatch()
	annotations := metadata["annotations"].(map[string]any)
	// The delay of an object a Bundle manages may be its own, which its
	// Bundle reads when it orphans it: removed, the object went at once.
	if set.Cluster != nil || bundleManaging(obj) == "" {
		annotations[limbov1alpha1.AnnotationDeletionDelay] = nil
	}
	metadata["resourceVersion"] = obj.GetResourceVersion()
	_, err := e.cancel(ctx, eventTarget, sub, map[string]any{"metadata": metadata}, cancelledBecause(sub.ref, why), why)
	return err
}

// deleteItem deletes a due orphan: its ClearFinalizers first, then as any orphan
// (deleteChecked). An object already terminating is not deleted again.
func (e *Engine) deleteItem(ctx context.Context, eventTarget runtime.Object, s subject, it Item, d Decision) Outcome {
	obj := it.Object
	if keep, cleared := withoutFinalizers(obj.GetFinalizers(), it.ClearFinalizers); cleared {
		err := patchWith(ctx, s.client, obj, map[string]any{"metadata": map[string]any{
			"finalizers":      keep,
			"resourceVersion": obj.GetResourceVersion(),
		}})
		if out, ok := e.goneOrChanged(err, obj, d); ok {
			return out
		}
		if err != nil {
			return Outcome{Decision: d, Err: err, Pending: pendingEntry(obj, d, err)}
		}
		log.FromContext(ctx).Info("finalizers cleared before delete", "object", s.ref, "pluginResource", obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource])
		if obj.GetDeletionTimestamp() != nil && len(keep) == 0 {
			return Outcome{Decision: d, Gone: true} // it was terminating: with its finalizers gone, so is it
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		// Deleted already (by an earlier pass, or by someone else): once.
		return Outcome{Decision: d, Pending: terminatingEntry(obj)}
	}
	return e.deleteChecked(ctx, eventTarget, s, d)
}

// withoutFinalizers returns finalizers minus clear, and whether any was removed.
// The result is a list, possibly empty, that the merge patch sends whole.
func withoutFinalizers(finalizers, clear []string) ([]string, bool) {
	keep := []string{}
	for _, f := range finalizers {
		if !slices.Contains(clear, f) {
			keep = append(keep, f)
		}
	}
	return keep, len(keep) < len(finalizers)
}
