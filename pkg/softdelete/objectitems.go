package softdelete

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

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
	// Requeue reports that the caller must come back within RequeueAfter (a
	// deadline, a hold).
	Requeue      bool
	RequeueAfter time.Duration
	// Err joins the failed writes and deletes; the caller retries.
	Err error
}

func (o *ItemsOutcome) after(d time.Duration) {
	if !o.Requeue || d < o.RequeueAfter {
		o.Requeue, o.RequeueAfter = true, max(d, 0)
	}
}

func (o *ItemsOutcome) fail(err error) { o.Err = errors.Join(o.Err, err) }

// decidedItem is an item with the state machine's decision.
type decidedItem struct {
	Item
	d Decision
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
	for _, it := range set.Items {
		if owner := it.Object.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]; owner != "" && owner != set.Owner {
			if !it.Desired {
				p := pendingEntry(it.Object, Decide(now, stateOf(it.Object, false)), nil)
				p.Message = "in limbo for plugin resource " + owner + "; left to it"
				out.Pending = append(out.Pending, set.pending(p))
			}
			continue
		}
		d := Decide(now, set.state(it))
		switch d.Action {
		case ActionNone:
		case ActionCancel:
			if err := e.cancelItem(ctx, eventTarget, set, it.Object, "desired again"); err != nil {
				out.fail(err)
			}
		default:
			groups[it.Group] = append(groups[it.Group], decidedItem{Item: it, d: d})
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

// processGroup decides one group's orphans: the gate is asked once if some are
// due, and deletes go in Order.
func (e *Engine) processGroup(ctx context.Context, eventTarget runtime.Object, set ItemSet, group string, items []decidedItem, out *ItemsOutcome) {
	slices.SortStableFunc(items, func(a, b decidedItem) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(describe(a.Object), describe(b.Object)))
	})
	hold := set.Hold
	if hold == "" && set.MayDelete != nil && slices.ContainsFunc(items, func(x decidedItem) bool { return x.d.Action == ActionDelete }) {
		h, err := set.MayDelete(ctx, group)
		switch {
		case err != nil:
			hold = "cannot tell whether it may be deleted: " + err.Error()
			out.fail(err)
		case h != "":
			hold = h
			out.after(HoldRecheckInterval)
		}
	}
	var lower, level []string // items of lower orders, and of the current order, still there
	for i, x := range items {
		if i > 0 && x.Order != items[i-1].Order {
			lower, level = append(lower, level...), nil
		}
		if !e.processOrphanItem(ctx, eventTarget, set, x, hold, lower, out) {
			level = append(level, set.ref(x.Object))
		}
	}
}

// processOrphanItem applies the decision about one orphan and reports whether it
// is gone. hold keeps a due orphan (the gate, or the Bundle not Ready); lower
// lists items of its group that must be gone first.
func (e *Engine) processOrphanItem(ctx context.Context, eventTarget runtime.Object, set ItemSet, x decidedItem, hold string, lower []string, out *ItemsOutcome) bool {
	obj, d, ref := x.Object, x.d, set.ref(x.Object)
	var err error
	counting := d.Action == ActionWait || d.Action == ActionDelete
	deletingNow := d.Action == ActionDelete && set.Hold == "" && hold == "" && len(lower) == 0
	if counting && !deletingNow && obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay] != set.Delay {
		// The resource's delay changed: the item says the delay its countdown
		// runs with, held or not, which `kubectl limbo pending` and `expedite`
		// read. (An item deleted now is not written first.)
		var delay any = set.Delay
		if set.Delay == "" {
			delay = nil // no delay: the annotation goes (an empty one is invalid)
		}
		err = patchWith(ctx, set.client(e), obj, map[string]any{"metadata": map[string]any{
			"annotations":     map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay},
			"resourceVersion": obj.GetResourceVersion(),
		}})
		if err != nil {
			out.fail(err)
		}
	}
	if set.Hold != "" {
		p := pendingEntry(obj, d, nil)
		if d.Action == ActionStamp || d.Action == ActionRestamp {
			p.DeletionTimestamp, p.DeleteAfter = nil, nil // not stamped: no countdown runs
		}
		p.Message = set.Hold
		out.Pending = append(out.Pending, set.pending(p))
		return false
	}
	switch d.Action {
	case ActionStamp, ActionRestamp:
		if d.Action == ActionRestamp {
			e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.EventInvalidStamp, "%s: %v", ref, d.Err)
		}
		if err = e.stampItem(ctx, set, obj, d.Stamp); err != nil {
			out.fail(err)
		} else {
			e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionScheduled,
				"%s is in limbo for %v: deleted at %s", ref, d.Delay, d.Deadline.UTC().Format(time.RFC3339))
			auditLog(ctx, eventTarget, obj, "stamped", d.Deadline, set.auditKeys(obj)...)
			out.after(d.RequeueAfter)
		}
	case ActionWait:
		out.after(d.RequeueAfter)
	case ActionDelete:
		p := pendingEntry(obj, d, nil)
		switch {
		case hold != "":
			p.Message = "due; held: " + hold
		case len(lower) > 0:
			p.Message = "due; waiting for " + strings.Join(lower, ", ") + " to be deleted first"
			out.after(HoldRecheckInterval)
		default:
			gone, err := e.deleteItem(ctx, eventTarget, set, x.Item, d)
			if gone {
				return true
			}
			switch {
			case err != nil:
				p.Message = err.Error()
				out.fail(err)
			case obj.GetDeletionTimestamp() != nil:
				p = terminatingEntry(obj)
				out.after(HoldRecheckInterval)
			}
		}
		out.Pending = append(out.Pending, set.pending(p))
		return false
	}
	out.Pending = append(out.Pending, set.pending(pendingEntry(obj, d, err)))
	return false
}

// state is what Decide reads of an item: its live annotations with the
// resource's delay in place of the object's own.
func (s ItemSet) state(it Item) State {
	st := stateOf(it.Object, it.Desired)
	ann := make(map[string]string, len(st.Annotations)+1)
	for k, v := range st.Annotations {
		ann[k] = v
	}
	delete(ann, limbov1alpha1.AnnotationDeletionDelay)
	if s.Delay != "" {
		ann[limbov1alpha1.AnnotationDeletionDelay] = s.Delay
	}
	st.Annotations = ann
	return st
}

// stampItem starts obj's countdown: the delay, the stamp, the owner and the
// pending-deletion label, on the object as read (resourceVersion precondition: a
// concurrent change makes this a Conflict, and the next pass decides again).
func (e *Engine) stampItem(ctx context.Context, set ItemSet, obj client.Object, stamp time.Time) error {
	return patchWith(ctx, set.client(e), obj, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{
			limbov1alpha1.AnnotationDeletionDelay:     set.Delay,
			limbov1alpha1.AnnotationDeletionTimestamp: FormatStamp(stamp),
			limbov1alpha1.AnnotationPluginResource:    set.Owner,
		},
		"labels":          map[string]any{limbov1alpha1.LabelPendingDeletion: "true"},
		"resourceVersion": obj.GetResourceVersion(),
	}})
}

// CancelItem takes a plugin's object item out of limbo: the stamp, the delay, the
// owner and the label go (the object is not limbo's: nothing of limbo's is left
// on it). An object already gone is success.
func (e *Engine) CancelItem(ctx context.Context, eventTarget runtime.Object, obj client.Object, why string) error {
	return e.cancelItem(ctx, eventTarget, ItemSet{}, obj, why)
}

// cancelItem is CancelItem of an item of set, in set's cluster.
func (e *Engine) cancelItem(ctx context.Context, eventTarget runtime.Object, set ItemSet, obj client.Object, why string) error {
	keys := append(set.auditKeys(obj), "why", why) // before the patch takes the owner off obj
	err := patchWith(ctx, set.client(e), obj, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{
			limbov1alpha1.AnnotationDeletionTimestamp: nil,
			limbov1alpha1.AnnotationDeletionDelay:     nil,
			limbov1alpha1.AnnotationPluginResource:    nil,
		},
		"labels":          map[string]any{limbov1alpha1.LabelPendingDeletion: nil},
		"resourceVersion": obj.GetResourceVersion(),
	}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionCancelled, "%s: deletion cancelled (%s)", set.ref(obj), why)
	auditLog(ctx, eventTarget, obj, "cancelled", time.Time{}, keys...)
	return nil
}

// deleteItem deletes a due orphan: its ClearFinalizers first, then a delete with
// UID and resourceVersion preconditions (a re-created or changed object is decided
// again on the next pass, never deleted on a stale read). An object already
// terminating is not deleted again. It reports whether the object is gone.
func (e *Engine) deleteItem(ctx context.Context, eventTarget runtime.Object, set ItemSet, it Item, d Decision) (bool, error) {
	obj, ref, c := it.Object, set.ref(it.Object), set.client(e)
	if keep, cleared := withoutFinalizers(obj.GetFinalizers(), it.ClearFinalizers); cleared {
		err := patchWith(ctx, c, obj, map[string]any{"metadata": map[string]any{
			"finalizers":      keep,
			"resourceVersion": obj.GetResourceVersion(),
		}})
		if err != nil {
			return e.goneOrStale(err, obj, ref)
		}
		log.FromContext(ctx).Info("finalizers cleared before delete", "object", ref, "pluginResource", obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource])
		if obj.GetDeletionTimestamp() != nil && len(keep) == 0 {
			return true, nil // it was terminating: with its finalizers gone, so is it
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, nil // deleted already (by an earlier pass, or by someone else): once
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return e.goneOrStale(err, obj, ref)
	case err != nil:
		e.RecordFailure()
		e.Recorder.Eventf(eventTarget, corev1.EventTypeWarning, limbov1alpha1.EventDeleteFailed, "%s: %v", ref, err)
		return false, fmt.Errorf("delete %s: %w", ref, err)
	}
	e.RecordDeletion(d.Deadline)
	e.deleted.add(uid, e.Clock.Now())
	e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeleted, "%s deleted", ref)
	auditLog(ctx, eventTarget, obj, "deleted", d.Deadline, set.auditKeys(obj)...)
	if len(obj.GetFinalizers()) > 0 {
		obj.SetDeletionTimestamp(&metav1.Time{Time: e.Clock.Now()}) // terminating now, held by the rest
		return false, nil
	}
	return true, nil
}

// goneOrStale is the outcome of a failed write on a due item: NotFound means it is
// gone (success); a Conflict means it changed since it was read, and is decided
// again on the next pass; anything else is returned as is.
func (e *Engine) goneOrStale(err error, obj client.Object, ref string) (bool, error) {
	switch {
	case apierrors.IsNotFound(err):
		e.recordGone(obj.GetUID())
		return true, nil
	case apierrors.IsConflict(err):
		return false, fmt.Errorf("%s changed since it was read; decided again on the next pass", ref)
	}
	return false, err
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
