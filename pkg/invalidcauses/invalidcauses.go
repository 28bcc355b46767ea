// Package invalidcauses gives the API server's Invalid answers one text for
// one refusal. The API server lists an Invalid answer's causes in the order its
// validation found them, and validation walks maps (a ConfigMap's keys, a custom
// resource's properties): the same refusal reads differently from one request
// to the next. What limbo shows of such an answer — a resource's message, a
// pendingDeletions entry, a condition, an event — is written again whenever
// its text changes, so every place that shows one sorts its causes first.
package invalidcauses

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sorted returns err, or, when err is the API server's Invalid answer
// with several causes in the form apierrors.NewInvalid writes (`Kind "name" is
// invalid: [field: what, field: what]`), the same answer with its causes, in
// the message and in its details, sorted by field and text.
//
// The API server lists the causes in the order its validation found them, and
// that walks maps: a ConfigMap with two bad data keys, a custom resource whose
// schema fails at two properties, is refused with the causes in another order
// from one apply to the next. The message becomes the resource's, the
// conditions' and an event's: a Bundle Stalled on it, passed again with
// nothing changed, wrote its status and emitted the event again at every pass
// that drew another order. A message in any other form (an admission
// webhook's, a single cause) is left as it is.
func Sorted(err error) error {
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.Error() != err.Error() { // wrapped: the text is not the answer's alone
		return err
	}
	st := status.Status()
	if st.Reason != metav1.StatusReasonInvalid || st.Details == nil || len(st.Details.Causes) < 2 {
		return err
	}
	// The aggregate's text lists each distinct cause once, in the causes' order.
	list := causesText(st.Details.Causes)
	prefix, ok := strings.CutSuffix(st.Message, list)
	if !ok || !strings.HasPrefix(list, "[") { // a single distinct cause is not bracketed
		return err
	}
	out := *st.DeepCopy()
	slices.SortStableFunc(out.Details.Causes, func(a, b metav1.StatusCause) int {
		return cmp.Or(strings.Compare(causeText(a), causeText(b)), cmp.Compare(a.Type, b.Type))
	})
	out.Message = prefix + causesText(out.Details.Causes)
	return &apierrors.StatusError{ErrStatus: out}
}

// causeText is a cause as the API server's message writes it (field.Error).
func causeText(c metav1.StatusCause) string { return c.Field + ": " + c.Message }

// causesText is the list of causes as the API server's message writes it
// (utilerrors.NewAggregate): each distinct text once, in order, and in
// brackets when there are several. Linear: a template of tens of thousands of
// refused keys brings as many causes, at every refused apply.
func causesText(causes []metav1.StatusCause) string {
	var texts []string
	seen := make(map[string]bool, len(causes))
	for _, c := range causes {
		if text := causeText(c); !seen[text] {
			seen[text] = true
			texts = append(texts, text)
		}
	}
	if len(texts) == 1 {
		return texts[0]
	}
	return "[" + strings.Join(texts, ", ") + "]"
}
