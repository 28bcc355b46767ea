package invalidcauses

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
