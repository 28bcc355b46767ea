package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/listpages"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// conflictBackoff paces expedite's and cancel's retries after a Conflict (the
// object changed between read and patch). retry.DefaultRetry gives up after
// about 50 ms, which an object its own controller rewrites often (a
// csi-baremetal Volume, a rolling Deployment) outlasts; this one keeps trying
// for about 3 s, which a user at a prompt still waits for.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: time.Second}

// reportingBundle is the Bundle whose status.pendingDeletions reports obj when it
// is in limbo: the one whose plugin resource it is an item of, else its
// controller, else the one its limbo.dev/bundle label names (an object a
// teardown released has no owner any more).
func reportingBundle(obj metav1.Object) (client.ObjectKey, bool) {
	if key, _, ok := softdelete.SplitItemOwner(obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]); ok {
		return key, true
	}
	if owner := softdelete.BundleControllerOf(obj); owner != nil {
		return client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}, true
	}
	if name := obj.GetLabels()[limbov1alpha1.LabelBundle]; name != "" {
		return client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, true
	}
	return client.ObjectKey{}, false
}

// entryNamespace is the namespace of the object of a pendingDeletions entry of
// b: the entry's, else b's (the entry of a cluster-scoped object has none).
func entryNamespace(b *limbov1alpha1.Bundle, entry *limbov1alpha1.PendingDeletion) string {
	if entry.Namespace == "" {
		return b.Namespace
	}
	return entry.Namespace
}

// pendingEntry is b's status.pendingDeletions entry of the object of kind gk
// named name in namespace ("" for a cluster-scoped kind) in this cluster, or nil.
// An entry without a namespace is of a cluster-scoped object, or of one in b's
// namespace: the kind tells which, so either reading matches.
func pendingEntry(b *limbov1alpha1.Bundle, gk schema.GroupKind, namespace, name string) *limbov1alpha1.PendingDeletion {
	for i := range b.Status.PendingDeletions {
		if entry := &b.Status.PendingDeletions[i]; entry.Name == name && entryOf(b, entry, gk, namespace) {
			return entry
		}
	}
	return nil
}

// entryOf tells whether entry, of b's status.pendingDeletions, is of an object
// of kind gk in namespace ("" for a cluster-scoped kind) in this cluster, as
// pendingEntry reads it.
func entryOf(b *limbov1alpha1.Bundle, entry *limbov1alpha1.PendingDeletion, gk schema.GroupKind, namespace string) bool {
	return entry.Cluster == "" && entryGroupKind(entry) == gk &&
		(entry.Namespace == namespace || entryNamespace(b, entry) == namespace)
}

// bundleReport is what the Bundle that reports obj (reportingBundle) says of it
// in its status.pendingDeletions, with the Bundle's key: why its deletion waits,
// for example. It is "" when there is no such Bundle, it cannot be read, or its
// entry has no message: the report adds to what the command did, which stands
// without it. The entry of a Tombstone only names its external item.
func bundleReport(ctx context.Context, c client.Client, t target, obj metav1.Object) (client.ObjectKey, string) {
	key, ok := reportingBundle(obj)
	if !ok || isTombstone(t.mapping.GroupVersionKind.GroupKind()) {
		return key, ""
	}
	var b limbov1alpha1.Bundle
	if err := c.Get(ctx, key, &b); err != nil {
		return key, ""
	}
	if entry := pendingEntry(&b, t.mapping.GroupVersionKind.GroupKind(), t.namespace, t.name); entry != nil {
		switch {
		case !b.DeletionTimestamp.IsZero() && entry.Held():
			// The last pass's hold: a teardown decides by none (pending
			// says the same).
			return key, ""
		case !b.DeletionTimestamp.IsZero():
			return key, entry.Message
		case specInvalid(&b):
			return key, joinMessages(entry.Message, msgSpecInvalid)
		}
		return key, entry.Message
	}
	return key, ""
}

// refuseTerminating returns the error that refuses to verb (cancel, expedite) t
// when obj, t as just read, is already being deleted (a deletionTimestamp, held by
// finalizers: a PVC in use, say), else nil. Nothing a command writes stops or
// hastens that deletion: the API server removes the object once its finalizers
// are gone, and a cancel that stripped its limbo marks would only hide it.
func refuseTerminating(t target, obj metav1.Object, verb string) error {
	deleted := obj.GetDeletionTimestamp()
	if deleted == nil {
		return nil
	}
	state := fmt.Sprintf("already being deleted (since %s)", deleted.UTC().Format(time.RFC3339))
	if f := obj.GetFinalizers(); len(f) > 0 {
		state += "; held by finalizers: " + strings.Join(f, ", ")
	}
	what := "cancel cannot stop it"
	if verb != "cancel" {
		what = verb + " cannot hasten it"
	}
	return fmt.Errorf("cannot %s %s: it is %s; %s: the API server deletes it once its finalizers are removed",
		verb, t, state, what)
}

// namespaceBundles lists the Bundles of namespace in pages of
// defaultChunkSize, as pending lists them: a namespace may hold many.
func namespaceBundles(ctx context.Context, c client.Reader, namespace string) ([]limbov1alpha1.Bundle, error) {
	return readBundles(ctx, c, client.InNamespace(namespace), client.Limit(defaultChunkSize))
}

// readBundles reads every Bundle opts select, in the pages opts ask for.
func readBundles(ctx context.Context, c client.Reader, opts ...client.ListOption) ([]limbov1alpha1.Bundle, error) {
	var bundles []limbov1alpha1.Bundle
	err := listpages.Each(ctx, c, func() *limbov1alpha1.BundleList { return &limbov1alpha1.BundleList{} },
		func(page *limbov1alpha1.BundleList) { bundles = append(bundles, page.Items...) }, opts...)
	return bundles, err
}
