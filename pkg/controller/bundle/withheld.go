package bundle

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/limbo-dev/limbo/pkg/boundedtext"
)

// withheldNote ends what limbo says of the API server's answer about a Secret
// instead of its message.
const withheldNote = "(its message is withheld: it may quote the Secret's values)"

// valueFreeRefusal matches the refusals (403 Forbidden) that come before any
// look at the object: the authorizer's ("secrets \"password\" is forbidden: User
// \"system:serviceaccount:team-a:tenant\" cannot patch resource \"secrets\" ...";
// an authorizer is given the request's attributes, never its body) and the
// namespace lifecycle's ("unable to create new content in namespace x because it
// is being terminated"). They are kept whole: they say who may not do what,
// which is what the Bundle's author needs to read.
var valueFreeRefusal = regexp.MustCompile(`^[^ ]+ "[^"]*" is forbidden: (User "[^"]*" cannot [a-z]+ resource "[^"]*" |unable to create new content in namespace [^ ]+ because it is being terminated$)`)

// maxWithheldCauses bounds the fields a withheld answer names; maxCauseField
// bounds the text of each.
const (
	maxWithheldCauses = 10
	maxCauseField     = 256
)

// withheldError stands for an answer of the API server about a Secret: its
// status (reason, code, the fields its causes name) without its message, which
// may quote the Secret's values — a server-side apply that does not fit the
// kind's schema prints the value it could not use (".immutable: expected
// boolean, got &{aHVudGVyMiE=}"), an admission policy's message may print
// anything of the object. A Secret holds its own values and, the only kind
// that may (package reference), values read from other Secrets; the error
// becomes a resource's message, the Ready and Stalled conditions', an event's
// and a log line's, all read by more people than the Secret.
type withheldError struct{ status metav1.Status }

func (e *withheldError) Error() string         { return e.status.Message }
func (e *withheldError) Status() metav1.Status { return e.status }

// withholdSecretText returns err, or, when err is an answer of the API server
// (an APIStatus) about a request on a Secret, a *withheldError: it keeps the
// status's reason and code, so that the resource's reason is the same, and
// says which fields its causes name and what is wrong with them (data[bad
// key]: Invalid value) — the keys of a Secret's data are not withheld, as
// `kubectl describe secret` shows them — but not their message. An error of
// the client (a connection refused, a timeout) holds nothing of the object
// and is kept.
func withholdSecretText(isSecret bool, err error) error {
	var status apierrors.APIStatus
	if !isSecret || err == nil || !errors.As(err, &status) {
		return err
	}
	if _, ok := err.(*withheldError); ok {
		return err
	}
	in := status.Status()
	if in.Reason == metav1.StatusReasonForbidden && valueFreeRefusal.MatchString(in.Message) {
		return err
	}
	out := metav1.Status{Status: metav1.StatusFailure, Reason: in.Reason, Code: in.Code}
	var b strings.Builder
	fmt.Fprintf(&b, "the API server answered %d", in.Code)
	if in.Reason != "" {
		fmt.Fprintf(&b, " %s", in.Reason)
	}
	if in.Reason == metav1.StatusReasonUnknown && strings.Contains(err.Error(), untypablePatch) {
		b.WriteString(": the object does not fit the kind's schema (a field it does not have, or a value of the wrong type)")
	}
	if in.Details != nil {
		out.Details = &metav1.StatusDetails{Name: in.Details.Name, Group: in.Details.Group, Kind: in.Details.Kind}
		var fields []string
		for _, cause := range in.Details.Causes {
			what := field.ErrorType(cause.Type).String()
			if cause.Field == "" || strings.HasPrefix(what, "<unknown") || len(fields) == maxWithheldCauses {
				continue
			}
			f := boundedtext.Cut(cause.Field, maxCauseField)
			fields = append(fields, f+": "+what)
			out.Details.Causes = append(out.Details.Causes, metav1.StatusCause{Type: cause.Type, Field: f})
		}
		if len(fields) > 0 {
			b.WriteString(": " + strings.Join(fields, "; "))
		}
	}
	b.WriteString(" " + withheldNote)
	out.Message = b.String()
	return &withheldError{status: out}
}
