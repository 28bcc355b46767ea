package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

const expediteExample = `  # Delete the ConfigMap db-config now rather than when its delay expires
  kubectl limbo expedite configmap/db-config

  # The same for a Deployment, and for the Tombstone of an external item
  kubectl limbo expedite deployments.apps/app -n team-a
  kubectl limbo expedite tombstone/shop-storage-ns-gc-4f7c0e12ab -n team-a`

func newExpediteCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "expedite (TYPE/NAME | TYPE NAME)",
		Short: "Make the deadline of an object in limbo now",
		Long: `Make the deadline of an object in limbo (or of a Tombstone) now: its
limbo.dev/deletionTimestamp is set to the earlier of now and its current stamp,
minus its limbo.dev/deletionDelay, so the deadline has come by the controller's
clock as well as by this machine's (a clock ahead of the controller's cannot
postpone the deletion). The controller, which watches the object, deletes it at
its next pass, unless something holds the deletion (its Bundle not Ready, a
released object the reaper keeps for a Bundle that declares it, a plugin's
gate, ...): kubectl limbo pending shows what, and expedite prints what the Bundle
reports of the object and the reaper's hold. kubectl delete deletes it at once,
without going through the controller.

The stamp it moved is recorded in the annotation limbo.dev/expeditedFrom, so
that kubectl limbo pending -o wide counts IN-LIMBO from when the countdown
started; the controller never reads it.

The object must be in limbo (stamped with limbo.dev/deletionTimestamp), have a
valid delay, not be already being deleted, and not be declared again by its
controller, a Bundle (whose next pass would cancel the countdown).`,
		Example:           expediteExample,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeObjects(namesToExpedite),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, c, err := o.resolveWithClient(args)
			if err != nil {
				return err
			}
			result, err := expedite(cmd.Context(), c, t, o.now)
			if err != nil {
				return err
			}
			// Due is not deleted yet: the deletion may be held (its Bundle not
			// Ready, a released object kept for an adopter, a plugin's gate),
			// which only the controller decides; its Bundle's report may say.
			// An orphan another Bundle declares to adopt is handed over to it.
			next := "the controller deletes it at its next pass unless something holds it (kubectl limbo pending shows what)"
			if adopter := handedOverTo(cmd.Context(), c, t, result.Object); adopter != "" {
				next = fmt.Sprintf("the controller hands it over to Bundle %s, which declares it to adopt it (%s), at its next pass instead of deleting it",
					adopter, limbov1alpha1.AnnotationAdopt)
			}
			fmt.Fprintf(o.Out, "%s expedited: %s set to %s (delay %s), deadline %s: due now; %s\n",
				t, limbov1alpha1.AnnotationDeletionTimestamp, result.Stamp, result.Delay, result.Deadline.Format(time.RFC3339), next)
			if bundle, report := bundleReport(cmd.Context(), c, t, result.Object); report != "" {
				fmt.Fprintf(o.Out, "Bundle %s reports: %s\n", bundle, report)
			}
			if h, ok := readReaperHold(cmd.Context(), c, t, result.Object, o.now()); ok {
				fmt.Fprintf(o.Out, "The reaper holds it: %s\n", h.Why)
			}
			return nil
		},
	}
}

// expediteResult is what expedite wrote.
type expediteResult struct {
	// Stamp is the new limbo.dev/deletionTimestamp.
	Stamp string
	// Delay is the object's limbo.dev/deletionDelay.
	Delay time.Duration
	// Deadline is Stamp + Delay: now, to the second.
	Deadline time.Time
	// Object is the metadata of the object as patched.
	Object *metav1.PartialObjectMetadata
}

// expedite sets the limbo.dev/deletionTimestamp of t to
// softdelete.ExpediteStamp(min(now, stamp), delay), stamp being its current
// one, so that its deadline has come: now by this machine's clock, and at the
// latest when its countdown started by the controller's, which wrote the stamp.
// A clock ahead of the controller's thus cannot postpone the deletion. The
// deadline is no earlier than a minute before the object was made: one before
// that is a copy's old countdown, which the controller would restart. It
// refuses an object already being deleted, one that is not in limbo (no stamp),
// one its controlling Bundle declares again (refuseDeclaredAgain),
// and one whose delay is missing or invalid. The JSON merge patch carries the
// resourceVersion that was read, so a concurrent change (a cancel, say) makes it
// fail with a Conflict; it is then read and checked again.
func expedite(ctx context.Context, c client.Client, t target, now func() time.Time) (expediteResult, error) {
	var result expediteResult
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		obj, err := getMetadata(ctx, c, t)
		if err != nil {
			return err
		}
		check, err := checkExpedite(t, obj)
		if err != nil {
			return err
		}
		switch check.verdict {
		case inLimboWithoutDelay:
			return fmt.Errorf("cannot expedite %s: it has no %s annotation, so it is deleted without delay as soon as the controller sees it%s",
				t, limbov1alpha1.AnnotationDeletionDelay, holdSuffix(ctx, c, t, obj, now()))
		case unstamped:
			switch tornDown, err := refuseUnlessInLimbo(ctx, c, t, obj); {
			case err != nil:
				return fmt.Errorf("%s is not in limbo: it has no %s annotation, so no deletion is scheduled",
					t, limbov1alpha1.AnnotationDeletionTimestamp)
			case tornDown:
				return fmt.Errorf("cannot expedite %s yet: its Bundle is being deleted, and its teardown deletes it, or releases it to the reaper with its delay, when its wave comes (kubectl limbo pending shows it then); expedite it once released, or kubectl delete it now", t)
			}
			// An orphan its Bundle holds before stamping it (a resource not
			// Ready): in limbo, with no countdown to end yet.
			if !check.hasDelay {
				return fmt.Errorf("cannot expedite %s: it has no %s annotation: its Bundle no longer declares it, and deletes it without delay as soon as it may (it holds it now: kubectl limbo pending shows why)",
					t, limbov1alpha1.AnnotationDeletionDelay)
			}
			return fmt.Errorf("cannot expedite %s yet: its Bundle no longer declares it and holds it before its countdown of %s starts (kubectl limbo pending shows why); the countdown starts when the Bundle may delete, or kubectl delete it now",
				t, check.delay)
		}
		if err := refuseDeclaredAgain(ctx, c, t, obj); err != nil {
			return err
		}
		if err := refuseUndecided(ctx, c, t, obj); err != nil {
			return err
		}

		at := now()
		if started, err := time.Parse(time.RFC3339, check.stamp); err == nil && started.Before(at) {
			at = started // the controller's clock wrote it: its deadline has come by that clock too
		}
		// No earlier than the object's creation (less the clocks' slack): a
		// deadline before it is a copy's old countdown, which the controller
		// restarts (softdelete.CopySlack).
		// A second within it: the stamp is whole seconds, a delay need not be.
		if earliest := obj.GetCreationTimestamp().Add(-softdelete.CopySlack + time.Second); !obj.GetCreationTimestamp().Time.IsZero() && at.Before(earliest) {
			at = earliest
		}
		stamp := softdelete.ExpediteStamp(at, check.delay)
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"resourceVersion": obj.GetResourceVersion(),
				"annotations": map[string]any{
					limbov1alpha1.AnnotationDeletionTimestamp: stamp,
					limbov1alpha1.AnnotationExpeditedFrom:     countdownStartAfter(obj.GetAnnotations(), stamp),
				},
			},
		})
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		parsed, err := time.Parse(time.RFC3339, stamp)
		if err != nil {
			return err
		}
		result = expediteResult{Stamp: stamp, Delay: check.delay, Deadline: parsed.Add(check.delay), Object: obj}
		return nil
	})
	if err != nil {
		return expediteResult{}, err
	}
	return result, nil
}

// expediteVerdict is what expedite makes of an object that checkExpedite does
// not refuse outright.
type expediteVerdict int

const (
	// expeditable: stamped, with a valid delay: its stamp can be set back,
	// unless its controller, a Bundle, declares it again (refuseDeclaredAgain).
	expeditable expediteVerdict = iota
	// inLimboWithoutDelay: stamped, labelled limbo.dev/pending-deletion or
	// released, without a limbo.dev/deletionDelay (a teardown releases such an
	// object to an adopter without stamping it): it is deleted without delay as
	// soon as the controller sees it, so there is no stamp to set back.
	inLimboWithoutDelay
	// unstamped: neither stamped nor labelled: not in limbo, or an orphan its
	// Bundle holds before stamping it (refuseUnlessInLimbo tells); no countdown
	// to end either way.
	unstamped
)

// expediteCheck is what checkExpedite reads of an object.
type expediteCheck struct {
	verdict expediteVerdict
	// stamp is its limbo.dev/deletionTimestamp, possibly unparsable (expedite
	// then stamps from now).
	stamp string
	// delay is its limbo.dev/deletionDelay, when hasDelay.
	delay    time.Duration
	hasDelay bool
}

// checkExpedite judges obj, the object t as just read, from obj alone. It
// refuses with an error what expedite refuses whatever obj's Bundles say: an
// object being deleted, one with an invalid delay, one labelled
// limbo.dev/pending-deletion whose countdown has not started (no stamp). Of the
// others, the verdict tells whether there is a stamp to set back
// (expeditable); expedite says why there is none after reading the Bundles, and
// completion offers only the expeditable.
func checkExpedite(t target, obj *metav1.PartialObjectMetadata) (expediteCheck, error) {
	if err := refuseTerminating(t, obj, "expedite"); err != nil {
		return expediteCheck{}, err
	}
	annotations := obj.GetAnnotations()
	// An invalid delay first: the controller never stamps an orphan that has
	// one, and "not in limbo" would not say why.
	value, hasDelay := annotations[limbov1alpha1.AnnotationDeletionDelay]
	delay, err := softdelete.ParseDelay(value)
	if hasDelay && err != nil {
		return expediteCheck{}, fmt.Errorf("cannot expedite %s: %w; an object with an invalid delay is never deleted by the controller: fix the annotation, or kubectl delete it",
			t, err)
	}
	stamp, stamped := annotations[limbov1alpha1.AnnotationDeletionTimestamp]
	_, labelled := obj.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	check := expediteCheck{stamp: stamp, delay: delay, hasDelay: hasDelay}
	switch {
	case !hasDelay && (stamped || labelled || softdelete.Released(obj)):
		check.verdict = inLimboWithoutDelay
	case !stamped && labelled:
		return expediteCheck{}, fmt.Errorf("cannot expedite %s: it is labelled %s but has no %s annotation yet: its countdown starts when the controller stamps it",
			t, limbov1alpha1.LabelPendingDeletion, limbov1alpha1.AnnotationDeletionTimestamp)
	case !stamped:
		check.verdict = unstamped
	}
	return check, nil
}

// countdownStart is when the countdown of an object with annotations started:
// the limbo.dev/expeditedFrom that expedite wrote, while it is a stamp later
// than the object's limbo.dev/deletionTimestamp (the stamp expedite moved back
// from it), else the stamp itself. A limbo.dev/expeditedFrom not later than the
// stamp is stale: every cancel removes the note, but an older controller's left
// it, and a countdown that starts again later is stamped later than it. "" when
// the object has no stamp.
func countdownStart(annotations map[string]string) string {
	stamp := annotations[limbov1alpha1.AnnotationDeletionTimestamp]
	if from := annotations[limbov1alpha1.AnnotationExpeditedFrom]; laterStamp(from, stamp) {
		return from
	}
	return stamp
}

// countdownStartAfter is the limbo.dev/expeditedFrom that expedite writes with
// the new stamp of an object with annotations: when its countdown started
// (countdownStart), if that is later than the new stamp; else nil, which
// removes a stale one (a delay of 0s may move no stamp; an unparsable stamp
// tells nothing).
func countdownStartAfter(annotations map[string]string, stamp string) any {
	if start := countdownStart(annotations); laterStamp(start, stamp) {
		return start
	}
	return nil
}

// laterStamp tells whether a and b are stamps (RFC 3339) and a is the later.
func laterStamp(a, b string) bool {
	at, aErr := time.Parse(time.RFC3339, a)
	bt, bErr := time.Parse(time.RFC3339, b)
	return aErr == nil && bErr == nil && at.After(bt)
}

// refuseDeclaredAgain refuses to expedite obj, the object t as just read, when
// its controller, a Bundle, declares it again (re-added, its pass not run yet
// or stalled): that pass takes it out of limbo, cancelling the countdown, so
// "due now" would be false. A Bundle that cannot be read, or whose spec cannot
// be, does not refuse: expedite needs no right on Bundles, and an object
// expedited in vain is deleted by no one.
func refuseDeclaredAgain(ctx context.Context, c client.Client, t target, obj *metav1.PartialObjectMetadata) error {
	owner := softdelete.BundleControllerOf(obj)
	if owner == nil {
		return nil
	}
	key, b, declared, err := declarationCheck{ctx: ctx, c: c, t: t, verb: "expedite"}.controller(obj, owner)
	if err == nil && b != nil && b.UID == owner.UID && !b.DeletionTimestamp.IsZero() && bundlespec.DeclaredInLimbo(b, t.mapping.GroupVersionKind.GroupKind(), obj) {
		// Its teardown takes it out of limbo and releases it with a
		// countdown from the Bundle's deletion: the expedited one is lost.
		return fmt.Errorf("cannot expedite %s: its controller, Bundle %s, is being deleted and declares it again (or its generator may make it again): its teardown restarts the countdown from the Bundle's deletion when it releases it; expedite it once released, or kubectl delete it",
			t, key)
	}
	if err != nil || !declared {
		return nil
	}
	return fmt.Errorf("cannot expedite %s: its controller, Bundle %s, declares it again: its next pass takes it out of limbo, which cancels the countdown; to have it deleted, remove it from the Bundle's spec (then expedite it once it is stamped again), or kubectl delete it",
		t, key)
}

// refuseUndecided refuses to expedite obj, the object t as just read, when
// nothing deletes it (noBundleDecides, held: a restored copy without owner
// references): "due now" would be false. One the garbage collector deletes is
// not refused, nor is a Tombstone (the Tombstone controller's), and a Bundle
// that cannot be read does not refuse, as in refuseDeclaredAgain.
func refuseUndecided(ctx context.Context, c client.Client, t target, obj *metav1.PartialObjectMetadata) error {
	label := obj.GetLabels()[limbov1alpha1.LabelBundle]
	if label == "" || t.mapping.GroupVersionKind.GroupKind() == limbov1alpha1.TombstoneGVK.GroupKind() {
		return nil
	}
	named, err := declarationCheck{ctx: ctx, c: c, t: t, verb: "expedite"}.read(client.ObjectKey{Namespace: obj.GetNamespace(), Name: label}, "")
	if err != nil {
		return nil
	}
	if why, held, _ := noBundleDecides(obj, named); held {
		return fmt.Errorf("cannot expedite %s: %s", t, why)
	}
	return nil
}

// holdSuffix is what expedite's refusal of obj, an object in limbo without a
// delay, adds about the reaper's hold at now: the hold, when the reaper holds it
// (releasedHold); a pointer to kubectl limbo pending when that cannot be told
// (its Bundles cannot be read); else nothing.
func holdSuffix(ctx context.Context, c client.Client, t target, obj metav1.Object, now time.Time) string {
	h, ok, err := reaperHoldOf(ctx, c, t, obj, now)
	switch {
	case err != nil:
		return ", unless something holds it (kubectl limbo pending shows what)"
	case ok:
		return "; the reaper holds it meanwhile: " + h.Why
	}
	return ""
}

// readReaperHold is the reaper's hold of obj at now (releasedHold), if it holds
// it; nothing when it does not, or when the Bundles of obj's namespace cannot be
// read: this adds to what expedite did.
func readReaperHold(ctx context.Context, c client.Client, t target, obj metav1.Object, now time.Time) (reaperHold, bool) {
	h, ok, err := reaperHoldOf(ctx, c, t, obj, now)
	return h, ok && err == nil
}

// handedOverTo is the Bundle, other than the one that controls obj, that
// declares obj to adopt it: the pass at obj's deadline hands it over to that
// Bundle, not delete it. "" for none, and for an object no Bundle controls
// (a released one: the reaper's hold says) or a Tombstone.
func handedOverTo(ctx context.Context, c client.Client, t target, obj metav1.Object) string {
	owner := softdelete.BundleControllerOf(obj)
	if owner == nil || isTombstone(t.mapping.GroupVersionKind.GroupKind()) {
		return ""
	}
	if b := adopterOf(ctx, c, t, owner.Name); b != nil {
		return b.Name
	}
	return ""
}

// reaperHoldOf reads the Bundles of obj's namespace and tells whether the reaper
// holds obj at now (releasedHold). Only a released object is looked at.
func reaperHoldOf(ctx context.Context, c client.Client, t target, obj metav1.Object, now time.Time) (reaperHold, bool, error) {
	if !softdelete.Released(obj) || isTombstone(t.mapping.GroupVersionKind.GroupKind()) {
		return reaperHold{}, false, nil
	}
	bundles, err := namespaceBundles(ctx, c, obj.GetNamespace())
	if err != nil {
		return reaperHold{}, false, err
	}
	h, ok := releasedHold(obj, t.mapping.GroupVersionKind.GroupKind(), indexBundles(bundles), now)
	return h, ok, nil
}
