package bundle

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// transientReasons are the resource errors that clear by themselves: failed
// reads, applies and plugin calls, retried with backoff; a reference whose value
// is not there yet. Any other error (an object limbo may not touch, a failed
// object, a forbidden or invalid write, a duplicate) needs someone's change:
// the Bundle is Stalled.
var transientReasons = map[string]bool{
	limbov1alpha1.ReasonReadFailed: true, limbov1alpha1.ReasonApplyFailed: true, limbov1alpha1.ReasonPluginFailed: true,
	limbov1alpha1.ReasonReferenceError: true, limbov1alpha1.ReasonUnsafeInventory: true,
}

// status computes the Bundle's status from the pass's outputs. Every condition
// message built from a list is bounded (bundlespec.JoinBounded): the API refuses
// a condition message over 32768 characters, and with it the whole status write.
func (p *pass) status() limbov1alpha1.BundleStatus {
	b := p.bundle
	st := limbov1alpha1.BundleStatus{
		ObservedGeneration: b.Generation,
		Conditions:         append([]metav1.Condition(nil), b.Status.Conditions...),
		Resources:          p.resources,
	}
	setPending(&st, p.pending)
	st.PendingDeletionCount += p.unlisted
	st.ManagedKinds = p.managedKinds()
	ready := 0
	var problems, waiting []string
	stalled := false // a problem that does not clear without someone's change
	for _, r := range p.resources {
		switch r.State {
		case limbov1alpha1.ResourceReady:
			ready++
		case limbov1alpha1.ResourceError:
			problems = append(problems, fmt.Sprintf("resource %q: %s", r.Name, r.Message))
			stalled = stalled || !transientReasons[r.Reason]
		default:
			waiting = append(waiting, fmt.Sprintf("%s (%s)", r.Name, r.State))
		}
	}
	st.ResourcesReady = fmt.Sprintf("%d/%d", ready, len(p.resources))
	var invalidDelays []string
	for _, pd := range p.pending {
		if pd.InvalidDelay() {
			invalidDelays = append(invalidDelays, fmt.Sprintf("%s %q: %s", pd.Kind, pd.Name, pd.Message))
		}
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: b.Generation})
	}
	switch {
	case len(p.specErrs) > 0:
		msg := invalidSpecMessage(p.specErrs) // bounded, as every list below (bundlespec.JoinBounded)
		set(limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonInvalidSpec, msg)
		set(limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonInvalidSpec, msg)
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionFalse, limbov1alpha1.ReasonInvalidSpec, "")
	case len(problems) > 0 && stalled:
		msg := bundlespec.JoinBounded(problems, "; ")
		set(limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonResourceError, msg)
		set(limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonResourceError, msg)
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionFalse, limbov1alpha1.ReasonResourceError, "")
	case len(problems) > 0:
		// Failed reads, applies and plugin calls are retried with backoff.
		msg := bundlespec.JoinBounded(problems, "; ")
		set(limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonResourceError, msg)
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionTrue, limbov1alpha1.ReasonProgressingWithRetry, msg)
		set(limbov1alpha1.ConditionStalled, metav1.ConditionFalse, limbov1alpha1.ReasonProgressingWithRetry, "")
	case p.emptyGuard:
		msg := "the spec has no resources but the Bundle still manages objects: nothing is deleted; set spec.allowEmpty: true to delete them"
		set(limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonEmptyBundle, msg)
		set(limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonEmptyBundle, msg)
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionFalse, limbov1alpha1.ReasonEmptyBundle, "")
	case len(waiting) > 0:
		msg := "waiting for " + bundlespec.JoinBounded(waiting, ", ")
		set(limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonProgressing, msg)
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionTrue, limbov1alpha1.ReasonProgressing, msg)
		set(limbov1alpha1.ConditionStalled, metav1.ConditionFalse, limbov1alpha1.ReasonProgressing, "")
	case len(invalidDelays) > 0:
		msg := "orphans with an invalid deletion delay are never deleted: " + bundlespec.JoinBounded(invalidDelays, "; ")
		set(limbov1alpha1.ConditionReady, metav1.ConditionFalse, limbov1alpha1.ReasonInvalidDeletionDelay, msg)
		set(limbov1alpha1.ConditionStalled, metav1.ConditionTrue, limbov1alpha1.ReasonInvalidDeletionDelay, msg)
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionFalse, limbov1alpha1.ReasonInvalidDeletionDelay, "")
	case p.orphansUndecided != "":
		// Its resources are Ready, but what left the spec was not decided on:
		// the generation is not done (kstatus: InProgress), and is retried.
		set(limbov1alpha1.ConditionReady, metav1.ConditionTrue, limbov1alpha1.ReasonReady, readyMessage(ready))
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionTrue, limbov1alpha1.ReasonProgressingWithRetry,
			"nothing decided about what left the spec: "+bundlespec.Bound(p.orphansUndecided))
		set(limbov1alpha1.ConditionStalled, metav1.ConditionFalse, limbov1alpha1.ReasonProgressingWithRetry, "")
	default:
		set(limbov1alpha1.ConditionReady, metav1.ConditionTrue, limbov1alpha1.ReasonReady, readyMessage(ready))
		set(limbov1alpha1.ConditionReconciling, metav1.ConditionFalse, limbov1alpha1.ReasonReady, "")
		set(limbov1alpha1.ConditionStalled, metav1.ConditionFalse, limbov1alpha1.ReasonReady, "")
	}
	settleAppliedDigests(&b.Status, &st)
	return st
}

// readyMessage is the Ready condition's message of a Bundle whose ready
// resources are all there are.
func readyMessage(ready int) string {
	if ready == 1 {
		return "1 resource ready"
	}
	return fmt.Sprintf("%d resources ready", ready)
}

// settleAppliedDigests keeps the digests of next (appliedDigest) from being a
// reason to write it: a digest follows the object's resourceVersion, which
// changes with every write of anyone's (a Deployment's status, a label), and a
// status write for each would undo the no-op pass. A digest last written stays
// true for good — it matches only a copy of the object no one has written since
// (appliedCache.seed) — so a resource for which this pass found none keeps the
// one last written for the same object, and a status that differs from the last
// written in its digests alone keeps those.
func settleAppliedDigests(last, next *limbov1alpha1.BundleStatus) {
	lastOf := func(i int, r *limbov1alpha1.ResourceStatus) string {
		var l *limbov1alpha1.ResourceStatus
		if i < len(last.Resources) && last.Resources[i].Name == r.Name {
			l = &last.Resources[i] // the order is the spec's: usually unchanged
		} else {
			l = last.Resource(r.Name)
		}
		if r.Object == nil {
			return ""
		}
		return digestOfObject(l, r.Object.UID)
	}
	found := make([]string, len(next.Resources))
	for i := range next.Resources {
		r := &next.Resources[i]
		kept := lastOf(i, r)
		found[i] = cmp.Or(r.AppliedDigest, kept)
		r.AppliedDigest = kept
	}
	if equality.Semantic.DeepEqual(*last, *next) {
		return
	}
	for i := range next.Resources {
		next.Resources[i].AppliedDigest = found[i]
	}
}

// digestOfObject is the appliedDigest st, a status entry last written,
// records, when it is of the object whose UID is uid; "" otherwise (no entry,
// no object, another object of the name).
func digestOfObject(st *limbov1alpha1.ResourceStatus, uid string) string {
	if st == nil || st.Object == nil || uid == "" || st.Object.UID != uid {
		return ""
	}
	return st.AppliedDigest
}

// resourceMessagesBudget bounds the messages of a Bundle's resources together:
// with a few hundred resources failing at once with long errors, or readiness
// messages copied from objects whose operators write at length, the status
// would pass what etcd takes, and every status write of the Bundle would fail.
const resourceMessagesBudget = 256 << 10

// boundResourceMessages cuts each message of statuses to its share of
// resourceMessagesBudget, at most bundlespec.MessageBudget (as every other
// message of the status) and at least minResourceMessage.
func boundResourceMessages(statuses []limbov1alpha1.ResourceStatus) {
	share := bundlespec.MessageBudget
	if n := len(statuses); n > 0 {
		share = max(min(share, resourceMessagesBudget/n), minResourceMessage)
	}
	for i := range statuses {
		if len(statuses[i].Message) > share { // every pass comes here: no copy of what fits
			statuses[i].Message = boundedtext.Cut(statuses[i].Message, share)
		}
	}
}

// minResourceMessage is the least of a resource's message kept, however many
// resources share the budget.
const minResourceMessage = 128

// setPending fills pendingDeletions (soonest first; entries without a deadline
// last; the first MaxPendingDeletionsListed of them, each message within
// MaxPendingDeletionMessage) and the columns derived from it (from all of them).
func setPending(st *limbov1alpha1.BundleStatus, pending []limbov1alpha1.PendingDeletion) {
	sorted := append([]limbov1alpha1.PendingDeletion(nil), pending...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		switch {
		case a.DeleteAfter != nil && b.DeleteAfter != nil && !a.DeleteAfter.Equal(b.DeleteAfter):
			return a.DeleteAfter.Before(b.DeleteAfter)
		case (a.DeleteAfter == nil) != (b.DeleteAfter == nil):
			return a.DeleteAfter != nil
		}
		// Then by what names the item, whole: entries alike in all but one of
		// these (PVCs of two namespaces, one name in two clusters) must not keep
		// the order they came in, which is the callers', so that the same
		// entries always make the same status.
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Resource, b.Resource)) < 0
	})
	st.PendingDeletionCount = int32(len(sorted))
	st.PendingDeletions = sorted
	if len(sorted) > limbov1alpha1.MaxPendingDeletionsListed {
		st.PendingDeletions = slices.Clone(sorted[:limbov1alpha1.MaxPendingDeletionsListed])
	}
	for i := range st.PendingDeletions { // copies: pending is not changed
		pd := &st.PendingDeletions[i]
		pd.Message = boundedtext.CutMiddle(pd.Message, limbov1alpha1.MaxPendingDeletionMessage)
	}
	st.NextDeletion = nil
	if len(sorted) > 0 && sorted[0].DeleteAfter != nil {
		st.NextDeletion = sorted[0].DeleteAfter.DeepCopy()
	}
}

// managedKinds is the status's record of the kinds the Bundle's objects have:
// the plan's and its plugins' (this pass), those of what is pending, and those
// the API server could not be asked about (keptKinds). A pass that stopped at a
// spec error keeps the previous record.
func (p *pass) managedKinds() []limbov1alpha1.ManagedKind {
	if len(p.specErrs) > 0 {
		return p.bundle.Status.ManagedKinds
	}
	kinds := map[schema.GroupVersionKind]bool{}
	for k := range p.kinds {
		kinds[k] = true
	}
	if p.unlisted > 0 { // kept, not judged: the kinds of what the list left out stay
		for _, k := range p.bundle.Status.ManagedKinds {
			kinds[schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)] = true
		}
	}
	for _, pd := range p.pending {
		if pd.Cluster == "" { // another cluster's kinds are not this one's
			kinds[schema.FromAPIVersionAndKind(pd.APIVersion, pd.Kind)] = true
		}
	}
	for _, k := range p.keptKinds {
		kinds[k] = true
	}
	var out []limbov1alpha1.ManagedKind
	for _, k := range sortedKinds(kinds) {
		out = append(out, limbov1alpha1.ManagedKind{APIVersion: k.GroupVersion().String(), Kind: k.Kind})
	}
	return out
}

// invalidSpecMessage is the Ready and Stalled conditions' message of a Bundle
// whose spec has errs.
func invalidSpecMessage(errs bundlespec.Errors) string {
	return "invalid spec: " + errs.Error()
}

// statusTooLarge reports whether err is the API server's refusal of a write
// as too large: its own limit on a request's body (413), or etcd's (a 500 whose
// message etcd's error fills).
func statusTooLarge(err error) bool {
	return err != nil && (apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), "request is too large"))
}

// reducedStatusEntries is how many pendingDeletions entries a reduced status
// keeps (the soonest; PendingDeletionCount keeps the whole count).
const reducedStatusEntries = 100

// reducedStatus is status without what makes it large and nothing decides on:
// the resources' messages and applied digests (a restarted controller applies
// again what it then cannot tell is applied), all but the soonest
// pendingDeletions entries, and conditions' messages past a bound. The
// resources' states, the generation, the pending count and the managed kinds,
// which the gates and the teardowns read, stay; Ready's message says why
// the rest is missing.
func reducedStatus(status limbov1alpha1.BundleStatus, why error) limbov1alpha1.BundleStatus {
	st := *status.DeepCopy()
	for i := range st.Resources {
		st.Resources[i].Message, st.Resources[i].AppliedDigest = "", ""
	}
	if len(st.PendingDeletions) > reducedStatusEntries {
		st.PendingDeletions = st.PendingDeletions[:reducedStatusEntries]
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Message = boundedtext.Cut(c.Message, reducedConditionMessage)
		if c.Type == limbov1alpha1.ConditionReady {
			c.Message = boundedtext.Cut(fmt.Sprintf("the full status is too large for the API server (%v); the resources' messages are left out: %s", why, c.Message), reducedConditionMessage)
		}
	}
	return st
}

// reducedConditionMessage bounds a reduced status's condition messages.
const reducedConditionMessage = 1 << 10
