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
	err := e.Client.Create(ctx, ts)
	switch {
	case apierrors.IsAlreadyExists(err):
		return ts, e.Client.Get(ctx, client.ObjectKeyFromObject(ts), ts)
	case err != nil:
		return nil, fmt.Errorf("create Tombstone for %s %q: %w", item.Kind, item.Name, err)
	}
	d := Decide(now, stateOf(ts, false))
	msg := fmt.Sprintf("%s %q is in limbo (Tombstone %s)", item.Kind, itemName(item), ts.Name)
	if !d.Deadline.IsZero() {
		msg += fmt.Sprintf(" for %v: deleted at %s", d.Delay, d.Deadline.UTC().Format(time.RFC3339))
	}
	e.Recorder.Event(b, corev1.EventTypeNormal, limbov1alpha1.EventDeletionScheduled, msg)
	AuditTombstone(ctx, "stamped", ts, d.Deadline)
	return ts, nil
}

// CancelTombstone removes a Tombstone without touching its item: the finalizer goes
// first, so the Tombstone controller never deletes the item.
func (e *Engine) CancelTombstone(ctx context.Context, eventTarget runtime.Object, ts *limbov1alpha1.Tombstone, why string) error {
	if controllerutil.ContainsFinalizer(ts, limbov1alpha1.FinalizerHardDelete) {
		orig := ts.DeepCopy()
		controllerutil.RemoveFinalizer(ts, limbov1alpha1.FinalizerHardDelete)
		if err := e.Client.Patch(ctx, ts, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	// With its UID: once the finalizer went, a Tombstone already being deleted is
	// gone at once, and the Bundle's pass may make a new one of the same name (the
	// same item, judged again); deleted by name alone, that one would be forced.
	uid := ts.UID
	if err := e.Client.Delete(ctx, ts, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return err
	}
	e.Recorder.Eventf(eventTarget, corev1.EventTypeNormal, limbov1alpha1.EventDeletionCancelled, "%s %q: deletion cancelled (%s)", ts.Spec.Item.Kind, itemName(ts.Spec.Item), why)
	AuditTombstone(ctx, "cancelled", ts, time.Time{})
	return nil
}

// AuditTombstone writes the audit trail's line of a Tombstone's item (msg:
// stamped, cancelled or deleted), with the keys of an object's: the item is the
// object ("<kind> <id>"), the Tombstone's UID the uid.
func AuditTombstone(ctx context.Context, msg string, ts *limbov1alpha1.Tombstone, deadline time.Time) {
	audit(ctx, msg, ts.Namespace+"/"+ts.Labels[limbov1alpha1.LabelBundle], ts.Spec.Item.Kind+" "+ts.Spec.Item.ID, ts.UID, deadline,
		"resource", ts.Spec.Resource)
}

// TombstonePending is a Tombstone's pendingDeletions entry.
func (e *Engine) TombstonePending(ts *limbov1alpha1.Tombstone) limbov1alpha1.PendingDeletion {
	d := Decide(e.Clock.Now(), stateOf(ts, false))
	ts.SetGroupVersionKind(limbov1alpha1.TombstoneGVK)
	p := pendingEntry(ts, d, nil)
	p.Message = fmt.Sprintf("%s %q", ts.Spec.Item.Kind, itemName(ts.Spec.Item))
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
