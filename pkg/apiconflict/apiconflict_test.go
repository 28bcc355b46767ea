package apiconflict

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// webhookDenial is an admission webhook's denial with code 409, as the API
// server passes it on: the webhook's message as the reason.
func webhookDenial() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusConflict,
		Reason:  "This resource is in-use by 1 usage(s), including the Usage \"db-uses-creds\" by Database/db.",
		Message: `admission webhook "nousages.protection.crossplane.io" denied the request: This resource is in-use by 1 usage(s)`}}
}

func TestIs(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a precondition that no longer holds", apierrors.NewConflict(gr, "db", errors.New("the object has been modified")), true},
		{"wrapped", fmt.Errorf("delete ConfigMap db: %w", apierrors.NewConflict(gr, "db", errors.New("uid mismatch"))), true},
		{"an apply's field conflict", apierrors.NewApplyConflict(nil, "conflict with \"kubectl\""), true},
		{"a webhook's denial with code 409", webhookDenial(), false},
		{"not found", apierrors.NewNotFound(gr, "db"), false},
		{"nil", nil, false},
		{"not an API error", errors.New("connection refused"), false},
	} {
		if got := Is(tc.err); got != tc.want {
			t.Errorf("%s: Is = %v, want %v", tc.name, got, tc.want)
		}
		if got, want := Denied(tc.err), tc.name == "a webhook's denial with code 409"; got != want {
			t.Errorf("%s: Denied = %v, want %v", tc.name, got, want)
		}
		if tc.name == "a webhook's denial with code 409" && !apierrors.IsConflict(tc.err) {
			t.Error("apimachinery's IsConflict no longer takes a webhook's 409 for a Conflict: this package may go")
		}
	}
}
