package bundle

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/invalidcauses"
)

// The API server's answer about a Secret keeps its reason and the fields it
// names, not its text; a client's error, or one about another kind, is kept.
func TestWithholdSecretText(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", field.ErrorList{
		field.Invalid(field.NewPath("data").Key("bad key"), "hunter2", "must be valid"),
		{Type: "Whatever hunter2", Field: "data[x]", BadValue: "hunter2"},
	})
	untypable := apierrors.NewInternalError(errors.New(untypablePatch + " (ns/s; /v1, Kind=Secret): .immutable: expected boolean, got &{hunter2}"))
	untypable.ErrStatus.Reason = ""
	for _, tc := range []struct {
		name   string
		err    error
		reason string
		want   []string
	}{
		{"invalid", invalid, limbov1alpha1.ReasonInvalid, []string{"422 Invalid", "data[bad key]: Invalid value", withheldNote}},
		{"forbidden", apierrors.NewForbidden(secrets, "s", errors.New("policy says hunter2")), limbov1alpha1.ReasonForbidden, []string{"403 Forbidden", withheldNote}},
		{"untypable", untypable, limbov1alpha1.ReasonInvalid, []string{"500", "does not fit the kind's schema", withheldNote}},
		{"internal", apierrors.NewInternalError(errors.New("illegal base64 data: hunter2")), limbov1alpha1.ReasonApplyFailed, []string{"500 InternalError", withheldNote}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withholdSecretText(true, tc.err)
			if strings.Contains(got.Error(), "hunter2") {
				t.Errorf("withheld error %q quotes the value", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("withheld error %q does not say %q", got, w)
				}
			}
			if r := applyFailureReason(tc.err); r != tc.reason {
				t.Errorf("applyFailureReason = %s, want %s", r, tc.reason)
			}
			if a, b := apierrors.ReasonForError(got), apierrors.ReasonForError(tc.err); a != b {
				t.Errorf("withheld reason %q, want the answer's %q", a, b)
			}
			if kept := withholdSecretText(false, tc.err); kept != tc.err {
				t.Errorf("the error of another kind is %v, want it as it is", kept)
			}
		})
	}
	// Refusals made before anyone looks at the object are kept whole: who may
	// not do what is what the author needs to read.
	for _, kept := range []error{
		apierrors.NewForbidden(secrets, "password", errors.New(`User "system:serviceaccount:team-a:tenant" cannot patch resource "secrets" in API group "" in the namespace "team-a"`)),
		apierrors.NewForbidden(secrets, "password", errors.New(`User "system:serviceaccount:team-a:deployr" cannot patch resource "secrets" in API group "" in the namespace "team-a" (ServiceAccount "deployr" does not exist in namespace "team-a")`)),
		apierrors.NewForbidden(secrets, "password", errors.New("unable to create new content in namespace team-a because it is being terminated")),
	} {
		if got := withholdSecretText(true, kept); got != kept {
			t.Errorf("the refusal %q became %q", kept, got)
		}
	}
	// One that only looks like it is withheld: text after the namespace
	// lifecycle's sentence may come from elsewhere.
	lookalike := apierrors.NewForbidden(secrets, "s", errors.New("unable to create new content in namespace x because it is being terminated; hunter2"))
	if got := withholdSecretText(true, lookalike); strings.Contains(got.Error(), "hunter2") {
		t.Errorf("withheld error %q quotes the value", got)
	}
	client := errors.New("dial tcp: connection refused")
	if got := withholdSecretText(true, client); got != client {
		t.Errorf("a client's error became %v", got)
	}
}

// A Secret's refusal, its causes sorted as applyFailed sorts them, names the
// fields in that order: the withheld text of one refusal is one text.
func TestWithheldCausesSorted(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", field.ErrorList{
		field.Invalid(field.NewPath("data", "z"), "x", "bad"), field.Invalid(field.NewPath("data", "a"), "y", "bad")})
	got := withholdSecretText(true, invalidcauses.Sorted(err)).Error()
	const want = `the API server answered 422 Invalid: data.a: Invalid value; data.z: Invalid value ` + withheldNote
	if got != want {
		t.Errorf("withheld = %q, want %q", got, want)
	}
}
