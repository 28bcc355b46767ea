package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

const cancelExample = `  # Keep the ConfigMap db-config, which its Bundle no longer declares
  kubectl limbo cancel configmap/db-config

  # Bring it back under the Bundle later: declare it again in the Bundle with
  #   metadata.annotations: {limbo.dev/adopt: "true"}`

func newCancelCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel (TYPE/NAME | TYPE NAME)",
		Short: "Keep an object that is in limbo, as an unmanaged object",
		Long: `Keep an object that is in limbo. Its Bundle would stamp it again while it
controls the object and no longer declares it, so cancel takes the object out of
the Bundle's hands: it removes the Bundle's controller owner reference, the
limbo.dev/deletionTimestamp annotation and the limbo.dev/pending-deletion and
limbo.dev/bundle labels. Other owner references, labels and annotations
(limbo.dev/deletionDelay included) are kept.

An object its Bundle controls and no longer declares is in limbo even before it
is stamped: the Bundle holds it while one of its resources is not Ready (kubectl
limbo pending shows it "held"), and deletes one with a 0s or invalid delay
without a countdown. cancel reads the Bundle to tell.

The object is then an ordinary object that no Bundle manages. To bring it back
under a Bundle, declare it in the Bundle with the annotation
limbo.dev/adopt: "true".

A Tombstone cannot be cancelled: the plugin that found its external item would
find it again. Exclude the item in the plugin's spec, or re-create what makes it
desired (for namespace-gc, the Kubernetes Namespace). Nor can a plugin's object
item in limbo (annotated limbo.dev/pluginResource: a node-removal or deorbit
item), for the same reason.`,
		Example:           cancelExample,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeInLimbo,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, c, err := o.resolveWithClient(args)
			if err != nil {
				return err
			}
			result, err := cancelDeletion(cmd.Context(), c, t)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s: deletion cancelled; removed %s.\n", t, strings.Join(result.Removed, ", "))
			fmt.Fprintf(o.Out, "No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation %s: \"true\".\n",
				limbov1alpha1.AnnotationAdopt)
			return nil
		},
	}
}

// cancelResult is what cancelDeletion removed.
type cancelResult struct {
	// Removed describes each thing removed, for example
	// `owner reference to Bundle "shop"`, `annotation limbo.dev/deletionTimestamp`.
	Removed []string
}

// cancelDeletion takes t out of limbo and out of its Bundle's hands: it
// removes the controller owner reference to a limbo.dev Bundle, the annotation
// limbo.dev/deletionTimestamp and the labels limbo.dev/pending-deletion and
// limbo.dev/bundle, and keeps everything else. It refuses an object that is not
// in limbo (refuseUnlessInLimbo), Tombstones and plugins' object items.
//
// ownerReferences is a list, which a JSON merge patch replaces as a whole, so
// the patch carries the resourceVersion that was read: if anything changed in
// between, the API server answers Conflict, and the object is read, checked
// and patched again (retry.RetryOnConflict). The list written is therefore
// exactly the one read, minus the Bundle's reference. An object the controller
// stamped in between (its Bundle became Ready) is thus cancelled with its stamp.
func cancelDeletion(ctx context.Context, c client.Client, t target) (cancelResult, error) {
	if isTombstone(t.mapping.GroupVersionKind.GroupKind()) {
		return cancelResult{}, tombstoneCancelError(ctx, c, t)
	}
	var result cancelResult
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := getMetadata(ctx, c, t)
		if err != nil {
			return err
		}
		if owner, ok := obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]; ok {
			return pluginItemCancelError(t, owner)
		}
		if err := refuseUnlessInLimbo(ctx, c, t, obj); err != nil {
			return err
		}
		patch, removed, err := cancelPatch(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		result = cancelResult{Removed: removed}
		return nil
	})
	if err != nil {
		return cancelResult{}, err
	}
	return result, nil
}

// refuseUnlessInLimbo returns nil when obj, the object t as just read, is in
// limbo, and else the error that refuses to cancel it. An object stamped or
// labelled pending-deletion is in limbo. So is an orphan that its controller,
// a Bundle, no longer declares but has not stamped nor labelled: the Bundle
// holds it while one of its resources is not Ready or its spec is empty, and
// never stamps one whose delay is 0s or invalid; it lists such an orphan in its
// status only, and deletes it, or starts its countdown, as soon as it may.
// Whether the Bundle still declares the object is read from the Bundle itself;
// a Bundle that cannot be read refuses the cancel, since taking a live object
// from its Bundle would break the Bundle. No precondition spans two objects: a
// Bundle that declares the object again between this read and the patch finds
// it without controller, and adopts it only if told to (limbo.dev/adopt).
func refuseUnlessInLimbo(ctx context.Context, c client.Client, t target, obj *metav1.PartialObjectMetadata) error {
	_, stamped := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]
	_, pending := obj.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	if stamped || pending {
		return nil
	}
	unmarked := fmt.Sprintf("it has neither the %s annotation nor the %s label", limbov1alpha1.AnnotationDeletionTimestamp, limbov1alpha1.LabelPendingDeletion)
	owner := bundleControllerOf(obj)
	if owner == nil {
		return fmt.Errorf("%s is not in limbo: %s, so there is no deletion to cancel", t, unmarked)
	}

	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}
	cannotTell := fmt.Sprintf("cannot tell whether %s is in limbo: %s, and its controller, Bundle %s,", t, unmarked, key)
	var bundle limbov1alpha1.Bundle
	if err := c.Get(ctx, key, &bundle); err != nil {
		return fmt.Errorf("%s cannot be read to tell whether it still declares it: %w", cannotTell, err)
	}
	if bundle.UID != owner.UID {
		return fmt.Errorf("%s is gone: Bundle %s is another Bundle now (uid %s, not %s)", cannotTell, key, bundle.UID, owner.UID)
	}
	notInLimbo := func(why string) error {
		return fmt.Errorf("%s is not in limbo: its controller, Bundle %s, %s, so there is no deletion to cancel", t, key, why)
	}
	gk := t.mapping.GroupVersionKind.GroupKind()
	if bundlespec.Declares(&bundle, gk, t.name) != bundlespec.NotDeclared {
		return notInLimbo("still declares it")
	}
	// A generated object is declared by its plugin, not by a template: whether
	// the plugin still generates it, only the controller knows, and it lists
	// the object in the Bundle's status once it does not.
	if generator := obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]; generator != "" &&
		bundle.PluginResource(generator) != nil && pendingEntry(&bundle, gk, t.namespace, t.name) == nil {
		return notInLimbo(fmt.Sprintf("may still generate it (plugin resource %q, annotation %s), and does not list it in status.pendingDeletions",
			generator, limbov1alpha1.AnnotationGeneratedBy))
	}
	return nil
}

// cancelPatch is the JSON merge patch that cancels the deletion of obj, and a
// description of what it removes.
func cancelPatch(obj *metav1.PartialObjectMetadata) ([]byte, []string, error) {
	annotations, labels := obj.GetAnnotations(), obj.GetLabels()
	var removed []string
	metadata := map[string]any{"resourceVersion": obj.GetResourceVersion()}

	owners := obj.GetOwnerReferences()
	kept := make([]metav1.OwnerReference, 0, len(owners))
	for _, ref := range owners {
		if isBundleController(ref) {
			removed = append(removed, fmt.Sprintf("owner reference to Bundle %q", ref.Name))
			continue
		}
		kept = append(kept, ref)
	}
	if len(kept) != len(owners) {
		if len(kept) == 0 {
			metadata["ownerReferences"] = nil
		} else {
			metadata["ownerReferences"] = kept
		}
	}

	// Out of limbo as the controller's own cancel takes it, and out of the
	// Bundle's hands: its bundle label goes too.
	outOfLimbo := softdelete.OutOfLimboPatch()
	removeAnnotations := outOfLimbo["annotations"].(map[string]any)
	removeLabels := outOfLimbo["labels"].(map[string]any)
	for _, key := range slices.Sorted(maps.Keys(removeAnnotations)) {
		if _, ok := annotations[key]; ok {
			removed = append(removed, "annotation "+key)
		}
	}
	for _, key := range append(slices.Sorted(maps.Keys(removeLabels)), limbov1alpha1.LabelBundle) {
		if value, ok := labels[key]; ok {
			removed = append(removed, fmt.Sprintf("label %s=%s", key, value))
		}
	}
	removeLabels[limbov1alpha1.LabelBundle] = nil
	metadata["annotations"], metadata["labels"] = removeAnnotations, removeLabels

	patch, err := json.Marshal(map[string]any{"metadata": metadata})
	return patch, removed, err
}

// tombstoneCancelError explains why a Tombstone is not cancelled, and what to
// do instead.
func tombstoneCancelError(ctx context.Context, c client.Client, t target) error {
	var tomb limbov1alpha1.Tombstone
	if err := c.Get(ctx, t.key(), &tomb); err != nil {
		return err
	}
	bundle := tomb.Labels[limbov1alpha1.LabelBundle]
	if bundle == "" {
		bundle = "its Bundle"
	} else {
		bundle = fmt.Sprintf("Bundle %s/%s", tomb.Namespace, bundle)
	}
	resource := tomb.Spec.Resource
	if resource == "" {
		resource = "the plugin's resource"
	} else {
		resource = fmt.Sprintf("resource %q", resource)
	}
	msg := fmt.Sprintf("cannot cancel %s: a Tombstone stands for an external item (%s), and the plugin would find that item again and put it back in limbo. ",
		t, describeExternalItem(&tomb))
	switch tomb.Spec.Plugin {
	case "namespace-gc":
		name, _ := plugin.SplitItemName(tomb.Spec.Item.Name) // without the endpoint it was found on
		if name == "" {
			name = tomb.Spec.Item.ID
		}
		msg += fmt.Sprintf("To keep the item, add it to the plugin's exclude list (plugin.spec.exclude of %s in %s), or re-create what makes it desired (for namespace-gc: the Kubernetes Namespace %q)",
			resource, bundle, name)
	case "route-gc":
		msg += "To keep the item, re-create what makes it desired (for route-gc: a server of the project with the route's next hop as its address)"
	default:
		msg += "To keep the item, re-create what makes it desired"
	}
	return fmt.Errorf("%s. Deleting the Tombstone would delete the item now", msg)
}

// pluginItemCancelError explains why a plugin's object item in limbo (annotated
// with the plugin resource whose countdown it is, owner) is not cancelled.
func pluginItemCancelError(t target, owner string) error {
	resource, bundle := "its plugin resource", "its Bundle"
	if key, name, ok := softdelete.SplitItemOwner(owner); ok {
		resource, bundle = fmt.Sprintf("resource %q", name), "Bundle "+key.String()
	}
	return fmt.Errorf("cannot cancel %s: it is in limbo for plugin %s of %s (annotation %s), and the plugin would find it again and put it back in limbo. "+
		"To keep it, re-create what makes it desired (for node-removal: its Node; for deorbit: change the selection before the Bundle is deleted), "+
		"or remove the plugin resource from the Bundle, which cancels the countdowns of its items",
		t, resource, bundle, limbov1alpha1.AnnotationPluginResource)
}
