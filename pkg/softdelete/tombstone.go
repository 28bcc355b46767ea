package softdelete

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/limbo-dev/limbo/pkg/apiconflict"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// TombstoneName is the deterministic name of the Tombstone of item, found by
// resource of Bundle bundle: the same orphan always maps to the same Tombstone,
// and two Bundles of a namespace never share one. The hash covers all three, so
// a name shortened to fit stays unique.
func TombstoneName(bundle, resource string, item limbov1alpha1.ExternalItem) string {
	sum := sha256.Sum256([]byte(bundle + "/" + resource + "/" + item.Kind + "/" + item.ID))
	prefix := bundle + "-" + resource
	if max := validation.DNS1123SubdomainMaxLength - 11; len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return prefix + "-" + hex.EncodeToString(sum[:])[:10]
}

// TombstoneKey identifies the orphan a Tombstone stands for, whatever its name.
func TombstoneKey(resource string, item limbov1alpha1.ExternalItem) string {
	return resource + "/" + item.Kind + "/" + item.ID
}

// OrphanExternal represents an orphaned external item by a Tombstone in the
// Bundle's namespace, owned by the Bundle, stamped now with delay. The Tombstone
// controller deletes the item at the deadline. It is idempotent, and returns the
// Tombstone (as created, or as it already was).
func (e *Engine) OrphanExternal(ctx context.Context, b *limbov1alpha1.Bundle, plugin, resource, delay string, item limbov1alpha1.ExternalItem) (*limbov1alpha1.Tombstone, error) {
	now := e.Clock.Now()
	ts := &limbov1alpha1.Tombstone{
		ObjectMeta: metav1.ObjectMeta{
			Name:        TombstoneName(b.Name, resource, item),
			Namespace:   b.Namespace,
			Labels:      e.Shard.CopyLabels(b.Labels, map[string]string{limbov1alpha1.LabelBundle: b.Name, limbov1alpha1.LabelPendingDeletion: "true"}),
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: FormatStamp(now)},
			Finalizers:  []string{limbov1alpha1.FinalizerHardDelete},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: limbov1alpha1.GroupVersion.String(), Kind: limbov1alpha1.BundleGVK.Kind,
				Name: b.Name, UID: b.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: limbov1alpha1.TombstoneSpec{Plugin: plugin, Resource: resource, Item: item},
	}
	if delay != "" {
		ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] = delay
	}
	err := e.Client.Create(ctx, ts) // refused, ts is as it was: made again below if need be
	if apierrors.IsAlreadyExists(err) {
		existing, readErr := e.existingTombstone(ctx, b, client.ObjectKeyFromObject(ts))
		if existing != nil || readErr != nil {
			return existing, readErr
		}
		// An earlier Bundle's, removed: this one's is made now.
		err = e.Client.Create(ctx, ts)
	}
	if err != nil {
		return nil, fmt.Errorf("create Tombstone for %s %q: %w", item.Kind, item.Name, err)
	}
	d := Decide(now, StateOf(ts, false))
	msg := fmt.Sprintf("%s is in limbo (Tombstone %s)", tombstoneRef(ts), ts.Name)
	if !d.Deadline.IsZero() {
		msg += fmt.Sprintf(" for %v: deleted at %s", d.Delay, d.Deadline.UTC().Format(time.RFC3339))
	}
	e.Recorder.Event(b, corev1.EventTypeNormal, limbov1alpha1.EventDeletionScheduled, msg)
	AuditTombstone(ctx, "stamped", ts, d.Deadline)
	return ts, nil
}

// existingTombstone is the Tombstone key names, which an orphan of b has already,
// read from the API server: a cache shows only this controller's shard, and a
// Tombstone made before b moved to this shard keeps the old shard's labels (its
// every pass failed on a Tombstone its cache could not show, and, the old shard
// stopped, nothing deleted the item). Such a Tombstone of b is moved into b's
// shard, so that this shard's passes and Tombstone controller take it over; the
// move is guarded by its resourceVersion, as the old shard's writes are.
//
// One that b does not control is an earlier Bundle's of b's name (its owner
// reference removed by --cascade=orphan, its teardown gone without it) or a
// forgery: listed by b's passes as b's, it was never acted on — the Tombstone
// controller takes it for a replaced Bundle's — nor cancelled, nor made anew.
// It is removed (its countdown cancelled: its item is never deleted by it), and
// existingTombstone returns neither Tombstone nor error: the caller makes b's.
func (e *Engine) existingTombstone(ctx context.Context, b *limbov1alpha1.Bundle, key client.ObjectKey) (*limbov1alpha1.Tombstone, error) {
	ts := &limbov1alpha1.Tombstone{}
	if err := e.Reader.Get(ctx, key, ts); err != nil {
		return nil, fmt.Errorf("read Tombstone %s: %w", key.Name, err)
	}
	if !metav1.IsControlledBy(ts, b) {
		if cancelledAlready(ts) {
			// Made anew once it is gone, and not announced again at each retry.
			return nil, fmt.Errorf("an earlier Bundle's Tombstone %s is being deleted (held by finalizers %v): this Bundle's is made once it is gone", key.Name, ts.Finalizers)
		}
		if err := e.CancelTombstone(ctx, b, ts, "it was not this Bundle's (an earlier Bundle's of its name): made anew"); err != nil {
			return nil, fmt.Errorf("remove Tombstone %s, an earlier Bundle's: %w", key.Name, err)
		}
		return nil, nil
	}
	if err := e.Relabel(ctx, b, ts); err != nil {
		return nil, err
	}
	return ts, nil
}

// Relabel gives obj, which b controls, the labels by which b's controller
// finds it — limbo.dev/bundle with b's name, and b's shard's (its labels under
// the shard's keys) — unless it has them or b does not control it. What a
// Bundle wrote before it moved to another shard keeps the old shard's labels,
// so the new shard's cache does not show it. An object whose limbo.dev/bundle
// label another writer removed or changed (`kubectl label … limbo.dev/bundle-`)
// is found by no listing of b's: in limbo, it was never deleted; declared, a
// teardown let b go without it, and the garbage collector, which goes by the
// owner reference alone, deleted it at once, its delay ignored. Relabelled,
// either is b's again, as a drifted declared object's label is put back by its
// apply. The write is guarded by obj's resourceVersion, as the old shard's
// writes are, so that the two never both act on a version.
func (e *Engine) Relabel(ctx context.Context, b *limbov1alpha1.Bundle, obj client.Object) error {
	if !metav1.IsControlledBy(obj, b) || (obj.GetLabels()[limbov1alpha1.LabelBundle] == b.Name && e.Shard.Matches(obj.GetLabels())) {
		return nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("relabel %s: cannot copy it", obj.GetName())
	}
	labels := e.Shard.CopyLabels(b.Labels, obj.GetLabels())
	labels[limbov1alpha1.LabelBundle] = b.Name
	obj.SetLabels(labels)
	if err := e.Client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("relabel %s: %w", obj.GetName(), err)
	}
	return nil
}

// CancelTombstone removes a Tombstone without touching its item (RemoveTombstone),
// and announces the cancel. A Tombstone gone already is success, and no cancel
// is announced. One whose external delete was tried says so: a delete whose
// answer was lost, or that a restart kept from being recorded, may have taken
// effect, and the audit trail must not say only that the item was kept.
func (e *Engine) CancelTombstone(ctx context.Context, eventTarget runtime.Object, ts *limbov1alpha1.Tombstone, why string) error {
	if cancelledAlready(ts) {
		return nil // not announced again at each pass
	}
	if n, last := ts.Status.Attempts, ts.Status.LastAttemptTime; n > 0 && last != nil { // as the caller had it: the writes below read it back
		why += fmt.Sprintf("; %d delete attempts were made, the last at %s: the item may be gone already", n, last.UTC().Format(time.RFC3339))
	}
	if err := RemoveTombstone(ctx, e.Client, ts); err != nil {
		return client.IgnoreNotFound(err)
	}
	s := e.tombstoneSubject(ts)
	e.cancelled(ctx, eventTarget, s, cancelledBecause(s.ref, why), why)
	return nil
}

// cancelledAlready reports whether ts is being deleted without its hard-delete
// finalizer: cancelled (or its item deleted), held only by another
// controller's finalizer until it goes.
func cancelledAlready(ts *limbov1alpha1.Tombstone) bool {
	return ts.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete)
}

// RemoveTombstone removes ts through c, once nothing is to touch its item any
// more (cancelled, or its item deleted): its hard-delete finalizer goes first, so
// that the Tombstone controller never deletes the item after, then ts is deleted
// unless it is being deleted already (its finalizer gone, so is it). Both writes
// are guarded, the finalizer's removal by ts's resourceVersion and the delete by
// its UID: ts read from a stale cache never touches a Tombstone of the same name
// made since (the same item, judged again), whose finalizer gone would have its
// item never deleted, and whose delete would force it. It returns NotFound when ts
// was gone before (gone after this call removed its finalizer is success), and a
// Conflict when ts changed since it was read (read and decide again); ts replaced
// by another Tombstone of its name is success.
func RemoveTombstone(ctx context.Context, c client.Client, ts *limbov1alpha1.Tombstone) error {
	hadFinalizer := controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete)
	if hadFinalizer {
		orig := ts.DeepCopy()
		controllerutil.RemoveFinalizer(ts, limbov1alpha1.FinalizerHardDelete)
		if err := c.Patch(ctx, ts, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
	}
	if !ts.DeletionTimestamp.IsZero() {
		return nil
	}
	uid := ts.UID
	switch err := c.Delete(ctx, ts, client.Preconditions{UID: &uid}); {
	case apiconflict.Is(err): // another Tombstone of the name: not ts's to touch
		return nil
	case apierrors.IsNotFound(err) && hadFinalizer:
		return nil
	default:
		return err
	}
}

// StampTombstone starts the countdown of ts as d (a Stamp or Restamp, of an
// unparsable or removed stamp) says, as any orphan's, with events on ts. conflict
// reports that ts changed since it was read: read and decide again.
func (e *Engine) StampTombstone(ctx context.Context, ts *limbov1alpha1.Tombstone, d Decision) (conflict bool, err error) {
	return e.stampAndAnnounce(ctx, ts, e.tombstoneSubject(ts), d)
}

// tombstoneSubject is ts as the engine writes to it and reports about it: named
// by its item, audited as its item.
func (e *Engine) tombstoneSubject(ts *limbov1alpha1.Tombstone) subject {
	return subject{obj: ts, client: e.Client, reader: e.Reader, ref: tombstoneRef(ts),
		audit: func(ctx context.Context, msg string, deadline time.Time, extra ...any) {
			AuditTombstone(ctx, msg, ts, deadline, extra...)
		}}
}

// tombstoneRef names ts's item in events and messages: `<kind> "<name>"`.
func tombstoneRef(ts *limbov1alpha1.Tombstone) string {
	return fmt.Sprintf("%s %q", ts.Spec.Item.Kind, itemName(ts.Spec.Item))
}

// AuditTombstone writes the audit trail's line of a Tombstone's item (msg:
// stamped, cancelled or deleted), with the keys of an object's: the item is the
// object ("<kind> <id>"), the Tombstone's UID the uid; extra are further keys and
// values.
func AuditTombstone(ctx context.Context, msg string, ts *limbov1alpha1.Tombstone, deadline time.Time, extra ...any) {
	audit(ctx, msg, ts.Namespace+"/"+ts.Labels[limbov1alpha1.LabelBundle], ts.Spec.Item.Kind+" "+ts.Spec.Item.ID, ts.UID, deadline,
		append([]any{"resource", ts.Spec.Resource}, extra...)...)
}

// TombstonePending is a Tombstone's pendingDeletions entry.
func (e *Engine) TombstonePending(ts *limbov1alpha1.Tombstone) limbov1alpha1.PendingDeletion {
	d := Decide(e.Clock.Now(), StateOf(ts, false))
	ts.SetGroupVersionKind(limbov1alpha1.TombstoneGVK)
	p := pendingEntry(ts, d, nil)
	p.Message = tombstoneRef(ts)
	switch {
	case d.Action == ActionInvalid:
		p.Message += ": " + d.Err.Error() + "; never deleted until fixed"
	case ts.Status.LastError != "":
		p.Message += fmt.Sprintf(": attempt %d failed: %s", ts.Status.Attempts, ts.Status.LastError)
	}
	return *p
}

func itemName(item limbov1alpha1.ExternalItem) string {
	if item.Name != "" {
		return item.Name
	}
	return item.ID
}
