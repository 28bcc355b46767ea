package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		Short: "Keep an object that is in limbo",
		Long: `Keep an object that is in limbo. It removes the limbo marks, as the controller
does when an object is desired again: the limbo.dev/deletionTimestamp and
limbo.dev/released annotations and the limbo.dev/pending-deletion label, and
the note kubectl limbo expedite leaves (limbo.dev/expeditedFrom).

cancel reads the object's Bundle (its controller, or for an object a teardown
released, the Bundle its limbo.dev/bundle label names) and fails, writing
nothing, if it cannot read it (not found is no Bundle):
- Its controller, declaring the object again (re-added to its spec, before its
  next pass cancels the deletion, or while a spec error stalls it), keeps it: its
  controller owner reference and the limbo.dev/bundle label stay.
- An object without (live) controller that the Bundle its label names declares
  is refused: that Bundle adopts it, which ends the countdown, and it is not
  deleted until then.
- A Bundle one of whose templates cannot be read refuses the cancel: whether it
  declares the object cannot be told.
- Otherwise the Bundle would stamp the object again, so cancel also takes it out
  of the Bundle's hands: the Bundle's controller owner reference and the
  limbo.dev/bundle label go. The object is then an ordinary object that no
  Bundle manages; to bring it back under a Bundle, declare it there with the
  annotation limbo.dev/adopt: "true".
Other owner references, labels and annotations (limbo.dev/deletionDelay
included) are kept.

An object its Bundle controls and no longer declares is in limbo even before it
is stamped: the Bundle holds it while one of its resources is not Ready (kubectl
limbo pending shows it "held"), never stamps one with an invalid delay (never
deleted), and deletes one without a delay at once, without a countdown (a 0s
delay is stamped and labelled like any other). cancel reads the Bundle to tell.

An object already being deleted (held by finalizers) cannot be cancelled. Nor can
a Tombstone: the plugin that found its external item would find it again. Exclude
the item in the plugin's spec, or re-create what makes it desired (for
namespace-gc, the Kubernetes Namespace). Nor can a plugin's object item in limbo
(annotated limbo.dev/pluginResource: a node-removal or deorbit item), for the
same reason.`,
		Example:           cancelExample,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeObjects(namesToCancel),
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
			if k := result.Keeper; k.Bundle == (client.ObjectKey{}) {
				if adopter := adopterOf(cmd.Context(), c, t, ""); adopter != nil {
					fmt.Fprintf(o.Out, "Bundle %s declares it to adopt it (%s): its next pass adopts it and applies its template over it; to keep the object as it is, remove it from that Bundle's spec.\n",
						client.ObjectKeyFromObject(adopter), limbov1alpha1.AnnotationAdopt)
				} else {
					fmt.Fprintf(o.Out, "No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation %s: \"true\".\n",
						limbov1alpha1.AnnotationAdopt)
				}
			} else if k.ByLabel {
				fmt.Fprintf(o.Out, "Bundle %s may make it again (plugin resource %q has not been Ready in a pass of its spec): the label %s=%s is kept, by which its pass adopts it if the plugin makes it again; if not, nothing deletes it.\n",
					k.Bundle, k.Generator, limbov1alpha1.LabelBundle, k.Bundle.Name)
			} else if k.Generator != "" {
				fmt.Fprintf(o.Out, "Bundle %s may make it again (plugin resource %q has not been Ready in a pass of its spec) and keeps managing it: its owner reference and the label %s=%s are kept; if the plugin does not make it again, the Bundle's next pass starts a new countdown.\n",
					k.Bundle, k.Generator, limbov1alpha1.LabelBundle, k.Bundle.Name)
			} else {
				fmt.Fprintf(o.Out, "Bundle %s declares it again and keeps managing it: its owner reference and the label %s=%s are kept.\n",
					k.Bundle, limbov1alpha1.LabelBundle, k.Bundle.Name)
			}
			return nil
		},
	}
}

// adopterOf is the Bundle of t's namespace, other than the one named except,
// that declares t to adopt it, nil when none does or the Bundles cannot be
// listed (nothing more to say then).
func adopterOf(ctx context.Context, c client.Client, t target, except string) *limbov1alpha1.Bundle {
	if t.namespace == "" {
		return nil // a Bundle declares objects of its own namespace only
	}
	bundles, err := namespaceBundles(ctx, c, t.namespace)
	if err != nil {
		return nil
	}
	return bundlespec.Adopter(bundles, t.mapping.GroupVersionKind.GroupKind(), t.name, except)
}

// cancelResult is what cancelDeletion removed, and the Bundle that keeps the
// object.
type cancelResult struct {
	// Removed describes each thing removed, for example
	// `owner reference to Bundle "shop"`, `annotation limbo.dev/deletionTimestamp`.
	Removed []string
	// Keeper is the Bundle that keeps the object; none when the object is left
	// unmanaged.
	Keeper keeper
}

// keeper is the Bundle, the object's controller, that declares an object cancel
// takes out of limbo, and so keeps managing it.
type keeper struct {
	// Bundle is the Bundle's key; zero when no Bundle keeps the object.
	Bundle client.ObjectKey
	// Generator is the plugin resource of Bundle that may make the object
	// again ("" when Bundle's template declares it).
	Generator string
	// ByLabel: Bundle does not control the object (a teardown released it)
	// and keeps it by its limbo.dev/bundle label alone.
	ByLabel bool
}

// cancelDeletion takes t out of limbo: it removes the limbo marks that
// softdelete.OutOfLimboPatch removes (the engine's own cancel), and, unless a
// Bundle keeps the object (cancelKeeper), the controller owner reference to a
// limbo.dev Bundle and the label limbo.dev/bundle; it keeps everything else. It
// refuses an object that is not in limbo (refuseUnlessInLimbo), one already
// being deleted, Tombstones and plugins' object items.
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
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		obj, err := getMetadata(ctx, c, t)
		if err != nil {
			return err
		}
		if err := refuseToCancel(t, obj); err != nil {
			return err
		}
		k, err := cancelKeeper(ctx, c, t, obj)
		if err != nil {
			return err
		}
		// Taken from its Bundle, the object must not be left to the garbage
		// collector by the owners that remain.
		var doomed map[types.UID]string
		if k.Bundle == (client.ObjectKey{}) {
			if doomed, err = softdelete.DoomedOwners(ctx, c, c.RESTMapper(), obj, obj.GetLabels()[limbov1alpha1.LabelBundle]); err != nil {
				return fmt.Errorf("cannot cancel %s: %w", t, err)
			}
		}
		patch, removed, err := cancelPatch(obj, k, doomed)
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		result = cancelResult{Removed: removed, Keeper: k}
		return nil
	})
	if err != nil {
		return cancelResult{}, err
	}
	return result, nil
}

// refuseToCancel refuses, from obj alone (the object t as just read), what
// cancel never takes out of limbo: an object already being deleted, and a
// plugin's object item (its plugin would put it back).
func refuseToCancel(t target, obj *metav1.PartialObjectMetadata) error {
	if err := refuseTerminating(t, obj, "cancel"); err != nil {
		return err
	}
	if owner, ok := obj.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]; ok {
		return pluginItemCancelError(t, owner)
	}
	return nil
}

// cancelKeeper is the Bundle that keeps obj, the object t as just read, once
// cancel takes it out of limbo, or the error that refuses the cancel.
//
// An object with a limbo mark (the stamp, the pending-deletion label, the
// released mark) is in limbo. Its controller, a limbo.dev Bundle, is read: when
// it declares obj again (re-added, the pass that cancels the deletion not run
// yet or stalled by a spec error) and is not being deleted (a teardown never
// keeps anything), it keeps obj: only the limbo marks go, since taking obj from
// it would leave the Bundle reporting NotOwned.
//
// An object without controller (a teardown released it) or whose controller is
// gone (not found, or another Bundle of the name now) is refused while the
// Bundle its limbo.dev/bundle label names declares it: that Bundle adopts it by
// the label, which ends the countdown, and the reaper holds it until then
// (bundlespec.ReleasedHold). Cancelled instead, the object would be declared,
// labelled and without controller or limbo mark — what the garbage collector
// leaves of a --cascade=orphan delete, and a later delete of that Bundle would
// be taken for one, leaving all its objects behind.
//
// A Bundle that cannot be read (other than not found), or whose templates cannot
// all be read, fails the cancel: whether it declares obj cannot be told.
//
// An object without any limbo mark may be an orphan its Bundle holds:
// refuseUnlessInLimbo decides, and none keeps it.
//
// No precondition spans two objects. A Bundle that stops declaring obj between
// this read and the patch finds it controlled and unstamped, and stamps it again
// (its countdown restarts); one that declares it again finds it without
// controller, and adopts it only if told to (limbo.dev/adopt).
func cancelKeeper(ctx context.Context, c client.Client, t target, obj *metav1.PartialObjectMetadata) (keeper, error) {
	if !softdelete.HasLimboMark(obj) {
		_, err := refuseUnlessInLimbo(ctx, c, t, obj)
		return keeper{}, err
	}
	check := declarationCheck{ctx: ctx, c: c, t: t, verb: "cancel"}
	generator := obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]
	var controller *limbov1alpha1.Bundle
	if owner := softdelete.BundleControllerOf(obj); owner != nil {
		key, b, declared, err := check.controller(obj, owner)
		switch {
		case err != nil:
			return keeper{}, err
		case declared:
			return keeper{Bundle: key}, nil
		case b != nil && b.UID == owner.UID && b.DeletionTimestamp.IsZero() && bundlespec.MayGenerateAgain(b, generator):
			// Kept the Bundle's: disowned and unlabelled, an object its
			// generator makes again would be in the way of its next pass for
			// good (NotOwned: generated objects are never adopted), and the
			// Bundle never Ready. If the generator does not make it again,
			// the pass counts it down anew — refused, the cancel could not
			// be made again before that pass deleted it, long due.
			return keeper{Bundle: key, Generator: generator}, nil
		case b != nil && b.UID == owner.UID:
			return keeper{}, nil
		}
		controller = b // gone, or another Bundle of the name now: its reference goes
	}
	label := obj.GetLabels()[limbov1alpha1.LabelBundle]
	if label == "" {
		return keeper{}, nil
	}
	const role = "Bundle %s, which its label " + limbov1alpha1.LabelBundle + " names,"
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: label}
	named := controller
	if named == nil || named.Name != label {
		b, err := check.read(key, role)
		if err != nil {
			return keeper{}, err
		}
		named = b
	}
	if named == nil {
		return keeper{}, nil
	}
	switch declared, err := check.declares(named, role); {
	case err != nil:
		return keeper{}, err
	case declared:
		return keeper{}, fmt.Errorf("cannot cancel %s: Bundle %s, which its label %s names, declares it: its next pass adopts it, which ends the countdown, and until then it is not deleted (kubectl limbo pending shows why it waits); to keep it out of that Bundle instead, remove it from the Bundle's spec and cancel again",
			t, key, limbov1alpha1.LabelBundle)
	case named.DeletionTimestamp.IsZero() && bundlespec.MayGenerateAgain(named, generator):
		// Kept by its label: without it, a generated object is never adopted,
		// and the one its generator makes again was in the Bundle's way for
		// good (NotOwned), the Bundle never Ready. With it, the pass adopts it
		// if the generator makes it again; if not, labelled, without
		// controller or limbo mark, nothing deletes it. (Refused, the cancel
		// could not be made before the reaper deleted it, long due, the
		// moment the generator was Ready without it.)
		return keeper{Bundle: key, Generator: generator, ByLabel: true}, nil
	}
	return keeper{}, nil
}

// declarationCheck reads Bundles to tell whether they declare t again. Its
// errors, which say that this cannot be told, refuse verb (cancel, expedite).
type declarationCheck struct {
	ctx  context.Context
	c    client.Client
	t    target
	verb string
}

// read reads the Bundle at key; nil when it is not found. role names it in an
// error, with a %s for the key.
func (d declarationCheck) read(key client.ObjectKey, role string) (*limbov1alpha1.Bundle, error) {
	var b limbov1alpha1.Bundle
	err := d.c.Get(d.ctx, key, &b)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot %s %s: %s cannot be read to tell whether it declares it again: %w",
			d.verb, d.t, fmt.Sprintf(role, key), err)
	}
	return &b, nil
}

// declares tells whether b declares t and is not being deleted (a teardown
// never keeps anything). role names b in an error, as for read.
func (d declarationCheck) declares(b *limbov1alpha1.Bundle, role string) (bool, error) {
	if !b.DeletionTimestamp.IsZero() {
		return false, nil
	}
	declared, err := bundlespec.DeclaresReadably(b, d.t.mapping.GroupVersionKind.GroupKind(), d.t.name)
	if err != nil {
		return false, fmt.Errorf("cannot %s %s: whether %s declares it again cannot be told: %w; fix the Bundle's spec first",
			d.verb, d.t, fmt.Sprintf(role, client.ObjectKeyFromObject(b)), err)
	}
	return declared != bundlespec.NotDeclared, nil
}

// controller reads obj's controller, the limbo.dev Bundle of owner
// (bundleControllerOf), at key, and tells whether it declares obj again
// (declares): its next pass then takes obj out of limbo, cancelling its
// countdown. b is what was read at key: nil when gone, another Bundle of the
// name when its UID is not owner's (declared is then false).
func (d declarationCheck) controller(obj metav1.Object, owner *metav1.OwnerReference) (key client.ObjectKey, b *limbov1alpha1.Bundle, declared bool, err error) {
	const role = "its controller, Bundle %s,"
	key = client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}
	if b, err = d.read(key, role); err != nil || b == nil || b.UID != owner.UID {
		return key, b, false, err
	}
	declared, err = d.declares(b, role)
	return key, b, declared, err
}

// refuseUnlessInLimbo returns nil when obj, the object t as just read, which has
// no limbo mark (softdelete.HasLimboMark), is in limbo all the same, and else the error that
// refuses to cancel it. Such an object is in limbo when it is an orphan that its
// controller, a Bundle, no longer declares but has not stamped nor labelled: the
// Bundle holds it while one of its resources is not Ready or its spec is empty,
// never stamps one whose delay is invalid (it is never deleted), and deletes one
// without a delay at once, without a countdown (a 0s delay is stamped and labelled
// like any other, once the Bundle may); it lists such an orphan in its status
// only, and deletes it, or starts its countdown, as soon as it may. Whether the
// Bundle still declares the object is read from the Bundle itself; a Bundle that
// cannot be read refuses the cancel, since taking a live object from its Bundle
// would break the Bundle. No precondition spans two objects: a Bundle that
// declares the object again between this read and the patch finds it without
// controller, and adopts it only if told to (limbo.dev/adopt).
//
// An object whose controller is being deleted is in limbo whatever its Bundle
// declares (tornDown): the teardown deletes it, or releases it with its delay,
// when its wave comes. A cancel disowns it first, and the teardown then
// leaves it (its release conflicts, its fresh read finds it not the Bundle's).
func refuseUnlessInLimbo(ctx context.Context, c client.Client, t target, obj *metav1.PartialObjectMetadata) (tornDown bool, err error) {
	unmarked := fmt.Sprintf("it has neither the %s annotation nor the %s label", limbov1alpha1.AnnotationDeletionTimestamp, limbov1alpha1.LabelPendingDeletion)
	owner := softdelete.BundleControllerOf(obj)
	if owner == nil {
		return false, fmt.Errorf("%s is not in limbo: %s, so there is no deletion to cancel", t, unmarked)
	}

	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}
	cannotTell := fmt.Sprintf("cannot tell whether %s is in limbo: %s, and its controller, Bundle %s,", t, unmarked, key)
	var bundle limbov1alpha1.Bundle
	if err := c.Get(ctx, key, &bundle); err != nil {
		return false, fmt.Errorf("%s cannot be read to tell whether it still declares it: %w", cannotTell, err)
	}
	if bundle.UID != owner.UID {
		return false, fmt.Errorf("%s is gone: Bundle %s is another Bundle now (uid %s, not %s)", cannotTell, key, bundle.UID, owner.UID)
	}
	if !bundle.DeletionTimestamp.IsZero() {
		return true, nil
	}
	notInLimbo := func(why string) error {
		return fmt.Errorf("%s is not in limbo: its controller, Bundle %s, %s, so there is no deletion to cancel", t, key, why)
	}
	gk := t.mapping.GroupVersionKind.GroupKind()
	if bundlespec.Declares(&bundle, gk, t.name) != bundlespec.NotDeclared {
		return false, notInLimbo("still declares it")
	}
	// A generated object is declared by its plugin, not by a template: whether
	// the plugin still generates it, only the controller knows, and it lists
	// the object in the Bundle's status once it does not.
	if generator := obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]; generator != "" &&
		bundle.PluginResource(generator) != nil && pendingEntry(&bundle, gk, t.namespace, t.name) == nil {
		if bundle.Status.PendingDeletionsCut() {
			return false, fmt.Errorf("%s may still generate it (plugin resource %q, annotation %s), and lists only the soonest %d of its %d entries in status.pendingDeletions, not this one",
				cannotTell, generator, limbov1alpha1.AnnotationGeneratedBy, len(bundle.Status.PendingDeletions), bundle.Status.PendingDeletionCount)
		}
		return false, notInLimbo(fmt.Sprintf("may still generate it (plugin resource %q, annotation %s), and does not list it in status.pendingDeletions",
			generator, limbov1alpha1.AnnotationGeneratedBy))
	}
	return false, nil
}

// cancelPatch is the JSON merge patch that cancels the deletion of obj, kept by
// k, and a description of what it removes. The limbo marks go as the engine's
// own cancel removes them (softdelete.OutOfLimboPatch); unless k is obj's
// controller, a Bundle controller owner reference goes, and so do the owner
// references to doomed owners (softdelete.DoomedOwners); the limbo.dev/bundle
// label goes unless a Bundle keeps obj.
func cancelPatch(obj *metav1.PartialObjectMetadata, k keeper, doomed map[types.UID]string) ([]byte, []string, error) {
	annotations, labels := obj.GetAnnotations(), obj.GetLabels()
	kept := k.Bundle != (client.ObjectKey{})
	var removed []string
	metadata := map[string]any{"resourceVersion": obj.GetResourceVersion()}

	if !kept {
		owners := obj.GetOwnerReferences()
		others := make([]metav1.OwnerReference, 0, len(owners))
		for _, ref := range owners {
			if softdelete.IsBundleController(ref) {
				removed = append(removed, fmt.Sprintf("owner reference to Bundle %q", ref.Name))
				continue
			}
			if why, ok := doomed[ref.UID]; ok {
				removed = append(removed, fmt.Sprintf("owner reference to %s %q (%s)", ref.Kind, ref.Name, why))
				continue
			}
			others = append(others, ref)
		}
		if len(others) != len(owners) {
			if len(others) == 0 {
				metadata["ownerReferences"] = nil
			} else {
				metadata["ownerReferences"] = others
			}
		}
	}

	// Out of limbo as the controller's own cancel takes it; out of the Bundle's
	// hands too, its bundle label gone, unless a Bundle keeps it.
	outOfLimbo := softdelete.OutOfLimboPatch()
	removeAnnotations := outOfLimbo["annotations"].(map[string]any)
	removeLabels := outOfLimbo["labels"].(map[string]any)
	labelKeys := slices.Sorted(maps.Keys(removeLabels))
	if !kept {
		labelKeys = append(labelKeys, limbov1alpha1.LabelBundle)
		removeLabels[limbov1alpha1.LabelBundle] = nil
	}
	for _, key := range slices.Sorted(maps.Keys(removeAnnotations)) {
		if _, ok := annotations[key]; ok {
			removed = append(removed, "annotation "+key)
		}
	}
	for _, key := range labelKeys {
		if value, ok := labels[key]; ok {
			removed = append(removed, fmt.Sprintf("label %s=%s", key, value))
		}
	}
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
