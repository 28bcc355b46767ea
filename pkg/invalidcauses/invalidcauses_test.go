package invalidcauses

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's Invalid answer lists its causes in the order its validation
// walked a map; limbo shows them sorted, so that the same refusal reads the
// same at every pass. Answers in another form are kept as they are.
func TestSorted(t *testing.T) {
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	badKey := func(key string) *field.Error {
		return field.Invalid(field.NewPath("data"), key, "a valid config key must consist of alphanumeric characters")
	}
	first, second := badKey("first key!"), badKey("second key?")
	required := field.Required(field.NewPath("data"), "")
	const sorted = `ConfigMap "refused" is invalid: [data: Invalid value: "first key!": a valid config key must consist of alphanumeric characters, ` +
		`data: Invalid value: "second key?": a valid config key must consist of alphanumeric characters]`
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"several causes, in order", apierrors.NewInvalid(configMap, "refused", field.ErrorList{first, second}), sorted},
		{"several causes, in another order", apierrors.NewInvalid(configMap, "refused", field.ErrorList{second, first}), sorted},
		{"a cause twice (listed once)", apierrors.NewInvalid(configMap, "refused", field.ErrorList{second, first, second}), sorted},
		{"one cause", apierrors.NewInvalid(configMap, "refused", field.ErrorList{required}), `ConfigMap "refused" is invalid: data: Required value`},
		{"one cause twice", apierrors.NewInvalid(configMap, "refused", field.ErrorList{required, required}), `ConfigMap "refused" is invalid: data: Required value`},
		{"wrapped: kept", fmt.Errorf("apply: %w", apierrors.NewInvalid(configMap, "refused", field.ErrorList{second, first})),
			`apply: ConfigMap "refused" is invalid: [data: Invalid value: "second key?": a valid config key must consist of alphanumeric characters, ` +
				`data: Invalid value: "first key!": a valid config key must consist of alphanumeric characters]`},
		{"not Invalid", apierrors.NewBadRequest("b, a"), "b, a"},
		{"not the API server's", errors.New("connection refused"), "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Sorted(tc.err)
			if got.Error() != tc.want {
				t.Errorf("Sorted(%q) = %q, want %q", tc.err, got, tc.want)
			}
			if apierrors.ReasonForError(got) != apierrors.ReasonForError(tc.err) {
				t.Errorf("reason %s, want %s kept", apierrors.ReasonForError(got), apierrors.ReasonForError(tc.err))
			}
		})
	}
}

// A webhook's Invalid answer, its own message beside causes, is kept: its
// order is the webhook's, and its text is not a list limbo can take apart.
func TestSortedCausesKeepsOtherMessages(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "refused", field.ErrorList{
		field.Invalid(field.NewPath("data", "b"), "x", "no"), field.Invalid(field.NewPath("data", "a"), "y", "no")})
	err.ErrStatus.Message = `admission webhook "check.example" denied the request: b and a are wrong`
	if got := Sorted(err); got != error(err) {
		t.Errorf("sortedCauses changed a webhook's answer: %q", got)
	}
}

// The causes in the details are sorted too: a Secret's refusal shows the fields
// they name, not the message (the Bundle reconciler's withholdSecretText).
func TestSortedCausesSortsDetails(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", field.ErrorList{
		field.Invalid(field.NewPath("data", "z"), "x", "bad"), field.Invalid(field.NewPath("data", "a"), "y", "bad")})
	var status apierrors.APIStatus
	if !errors.As(Sorted(err), &status) {
		t.Fatal("Sorted lost the API status")
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	if got := strings.Join(fields, " "); got != "data.a data.z" {
		t.Errorf("causes' fields = %s, want data.a data.z", got)
	}
}

// Sorted answers a new error: the API server's, which the caller may still
// hold, is not reordered under it.
func TestSortedLeavesTheAnswerAlone(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "refused", field.ErrorList{
		field.Invalid(field.NewPath("data", "z"), "x", "bad"), field.Invalid(field.NewPath("data", "a"), "y", "bad")})
	before := err.Error()
	if sorted := Sorted(err); sorted == nil {
		t.Fatal("Sorted answered no error")
	}
	if err.Error() != before || err.ErrStatus.Details.Causes[0].Field != "data.z" {
		t.Errorf("the answer changed: %q, first cause %s", err, err.ErrStatus.Details.Causes[0].Field)
	}
}

// Causes of the same text (one line in the message) are ordered by type in the
// details, so that those too read the same whatever order they came in.
func TestSortedTiesByType(t *testing.T) {
	invalid := metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "data", Message: "bad"}
	required := metav1.StatusCause{Type: metav1.CauseTypeFieldValueRequired, Field: "data", Message: "bad"}
	other := metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "data.a", Message: "bad"}
	for _, causes := range [][]metav1.StatusCause{{invalid, required, other}, {required, invalid, other}} {
		err := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInvalid, Code: 422,
			Message: `ConfigMap "x" is invalid: [data: bad, data.a: bad]`, Details: &metav1.StatusDetails{Causes: causes}}}
		var status apierrors.APIStatus
		if !errors.As(Sorted(err), &status) {
			t.Fatal("Sorted lost the API status")
		}
		var types []string
		for _, c := range status.Status().Details.Causes {
			types = append(types, c.Field+":"+string(c.Type))
		}
		if got := strings.Join(types, " "); got != "data.a:FieldValueInvalid data:FieldValueInvalid data:FieldValueRequired" {
			t.Errorf("causes = %s, want data.a's, then data's Invalid before its Required", got)
		}
	}
}

// Only an Invalid answer's causes are the list its message ends with; another
// reason's message, even ending with brackets, is kept as it is, and so is an
// Invalid answer that has no causes.
func TestSortedKeepsOtherReasons(t *testing.T) {
	err := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonBadRequest, Code: 400,
		Message: "refused: [b: no, a: no]", Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Field: "b", Message: "no"}, {Field: "a", Message: "no"}}}}}
	if got := Sorted(err); got != error(err) {
		t.Errorf("Sorted changed a BadRequest: %q", got)
	}
	// An Invalid answer without details (a webhook's, an aggregated API's).
	bare := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInvalid, Code: 422, Message: "refused: [b, a]"}}
	if got := Sorted(bare); got != error(bare) {
		t.Errorf("Sorted changed an Invalid answer without details: %q", got)
	}
}

// BenchmarkSortedManyCauses: an Invalid answer of a ConfigMap template with
// 20,000 keys the API server refuses (each fits in a Bundle), sorted at every
// refused apply. Listing each distinct cause once by looking it up in the
// causes so far was quadratic: 1.5 s an answer at 20,000 causes.
func BenchmarkSortedManyCauses(b *testing.B) {
	var causes field.ErrorList
	for i := range 20_000 {
		causes = append(causes, field.Invalid(field.NewPath("data"), fmt.Sprintf("a b%05d", 20_000-i), "a valid config key must consist of alphanumeric characters"))
	}
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "refused", causes)
	for b.Loop() {
		if Sorted(err) == err {
			b.Fatal("not sorted")
		}
	}
}
