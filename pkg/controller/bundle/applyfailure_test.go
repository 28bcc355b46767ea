package bundle

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A refusal of the apply as it stands is named by the API server's reason (the
// Bundle is Stalled until someone changes something); anything a retry may get
// past is ApplyFailed.
func TestApplyFailureReason(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"forbidden", apierrors.NewForbidden(cm, "app", errors.New("cannot patch")), limbov1alpha1.ReasonForbidden},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "app", field.ErrorList{field.Required(field.NewPath("data"), "")}), limbov1alpha1.ReasonInvalid},
		{"bad request", apierrors.NewBadRequest("not a ConfigMap"), limbov1alpha1.ReasonBadRequest},
		// apimachinery's managedfields answers a field the kind does not have with
		// a 500 and no reason.
		{"untypable template", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: `failed to create typed patch object (/v1, Kind=ConfigMap): .spec: field not declared in schema`}}, limbov1alpha1.ReasonInvalid},
		{"other 500 without a reason", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: "etcdserver: leader changed"}}, limbov1alpha1.ReasonApplyFailed},
		{"wrapped", fmt.Errorf("apply ConfigMap %q: %w", "app", apierrors.NewForbidden(cm, "app", errors.New("no"))), limbov1alpha1.ReasonForbidden},
		{"other 500", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), limbov1alpha1.ReasonApplyFailed},
		{"conflict", apierrors.NewConflict(cm, "app", errors.New("changed")), limbov1alpha1.ReasonApplyFailed},
		{"unavailable", apierrors.NewServiceUnavailable("try later"), limbov1alpha1.ReasonApplyFailed},
		{"transport", errors.New("dial tcp 10.0.0.1:6443: connect: connection refused"), limbov1alpha1.ReasonApplyFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := applyFailureReason(tc.err); got != tc.want {
				t.Errorf("applyFailureReason(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}
