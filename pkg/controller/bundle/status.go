package bundle

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Condition types of a Bundle. Ready, Reconciling and Stalled follow kstatus, so
// `kubectl wait --for=condition=Ready` and kstatus-based tools read Bundles; the
// last two report a teardown, like a Namespace's.
const (
	ConditionReady            = "Ready"
	ConditionReconciling      = "Reconciling"
	ConditionStalled          = "Stalled"
	ConditionContentRemaining = "ContentRemaining"
	ConditionDeletionFailure  = "DeletionFailure"
)

// Condition reasons of a Bundle.
const (
	ReasonReady                = "Ready"
	ReasonProgressing          = "Progressing"
	ReasonResourceError        = "ResourceError"
	ReasonInvalidDeletionDelay = "InvalidDeletionDelay"
	ReasonAsExpected           = "AsExpected"
)

// status computes the Bundle's status from the pass's outputs.
func (p *pass) status() limbov1alpha1.BundleStatus {
	b := p.bundle
	st := limbov1alpha1.BundleStatus{
		ObservedGeneration: b.Generation,
		Conditions:         append([]metav1.Condition(nil), b.Status.Conditions...),
		Resources:          p.resources,
	}
	setPending(&st, p.pending)
	ready := 0
	var problems, waiting []string
	for _, r := range p.resources {
		switch r.State {
		case limbov1alpha1.ResourceReady:
			ready++
		case limbov1alpha1.ResourceError:
			problems = append(problems, fmt.Sprintf("resource %q: %s", r.Name, r.Message))
		default:
			waiting = append(waiting, fmt.Sprintf("%s (%s)", r.Name, r.State))
		}
	}
	st.ResourcesReady = fmt.Sprintf("%d/%d", ready, len(p.resources))
	var invalidDelays []string
	for _, pd := range p.pending {
		if pd.DeleteAfter == nil && strings.Contains(pd.Message, limbov1alpha1.AnnotationDeletionDelay) {
			invalidDelays = append(invalidDelays, fmt.Sprintf("%s %q: %s", pd.Kind, pd.Name, pd.Message))
		}
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: b.Generation})
	}
	switch {
	case len(p.specErrs) > 0:
		msg := "invalid spec: " + p.specErrs.Error()
		set(ConditionReady, metav1.ConditionFalse, ReasonInvalidSpec, msg)
		set(ConditionStalled, metav1.ConditionTrue, ReasonInvalidSpec, msg)
		set(ConditionReconciling, metav1.ConditionFalse, ReasonInvalidSpec, "")
	case len(problems) > 0:
		msg := strings.Join(problems, "; ")
		set(ConditionReady, metav1.ConditionFalse, ReasonResourceError, msg)
		set(ConditionStalled, metav1.ConditionTrue, ReasonResourceError, msg)
		set(ConditionReconciling, metav1.ConditionFalse, ReasonResourceError, "")
	case len(waiting) > 0:
		msg := "waiting for " + strings.Join(waiting, ", ")
		set(ConditionReady, metav1.ConditionFalse, ReasonProgressing, msg)
		set(ConditionReconciling, metav1.ConditionTrue, ReasonProgressing, msg)
		set(ConditionStalled, metav1.ConditionFalse, ReasonProgressing, "")
	case len(invalidDelays) > 0:
		msg := "orphans with an invalid deletion delay are never deleted: " + strings.Join(invalidDelays, "; ")
		set(ConditionReady, metav1.ConditionFalse, ReasonInvalidDeletionDelay, msg)
		set(ConditionStalled, metav1.ConditionTrue, ReasonInvalidDeletionDelay, msg)
		set(ConditionReconciling, metav1.ConditionFalse, ReasonInvalidDeletionDelay, "")
	default:
		set(ConditionReady, metav1.ConditionTrue, ReasonReady, fmt.Sprintf("%d resources ready", ready))
		set(ConditionReconciling, metav1.ConditionFalse, ReasonReady, "")
		set(ConditionStalled, metav1.ConditionFalse, ReasonReady, "")
	}
	return st
}

// setPending fills pendingDeletions (soonest first; entries without a deadline
// last) and the columns derived from it.
func setPending(st *limbov1alpha1.BundleStatus, pending []limbov1alpha1.PendingDeletion) {
	sorted := append([]limbov1alpha1.PendingDeletion(nil), pending...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		switch {
		case a.DeleteAfter != nil && b.DeleteAfter != nil && !a.DeleteAfter.Equal(b.DeleteAfter):
			return a.DeleteAfter.Before(b.DeleteAfter)
		case (a.DeleteAfter == nil) != (b.DeleteAfter == nil):
			return a.DeleteAfter != nil
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	st.PendingDeletions = sorted
	st.PendingDeletionCount = int32(len(sorted))
	st.NextDeletion = nil
	if len(sorted) > 0 && sorted[0].DeleteAfter != nil {
		st.NextDeletion = sorted[0].DeleteAfter.DeepCopy()
	}
}
