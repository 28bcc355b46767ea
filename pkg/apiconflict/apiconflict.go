// Package apiconflict tells the API server's own conflicts from the 409 an
// admission webhook denies a request with.
package apiconflict

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Is reports whether err is a Conflict of the API server's own, reason
// Conflict: a precondition (UID, resourceVersion) that no longer holds, an
// optimistic write that lost, an apply's field conflict — "it changed since it
// was read: read it again and decide again".
//
// apimachinery's IsConflict also takes any 409 whose reason it does not know,
// which is what a webhook's denial with code 409 is (Crossplane's Usage
// protection answers a DELETE of a resource in use with 409 and its message as
// the reason). Taken for a change, such a refusal was read again and retried at
// once, for good — every 100 ms by a Bundle's pass, as fast as the rate limit
// allows by the reaper — and reported nowhere: no DeleteFailed, no
// DeletionFailure, no backoff. It is a refusal like any other now.
func Is(err error) bool {
	return err != nil && apierrors.ReasonForError(err) == metav1.StatusReasonConflict
}

// Denied reports whether err is a 409 that is no Conflict of the API server's
// own (Is): an admission webhook's denial, which retrying does not clear.
func Denied(err error) bool {
	return apierrors.IsConflict(err) && !Is(err)
}
