package it

import (
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A countdown ends on time while another orphan of the same Bundle keeps failing
// to delete (an admission policy refuses it): every pass of the Bundle fails, and
// the work queue backs the Bundle off up to 30 s, which must not push the other
// orphan's deadline back.
// Not parallel: it measures how late the delete comes, which other tests' load
// would blur.
func TestSoftDeleteDeadlineWhilePassesFail(t *testing.T) {
	ns := env.Namespace(t)
	const delay = 15 * time.Second
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "shop", keep,
		objectResource(t, "stuck", configMap("stuck", map[string]any{"a": "b"}, nil)),
		objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: delay.String()})))
	b = waitReady(t, b)
	refuseDeletes(t, getObject(t, configMapGVK, ns, "stuck"), "configmaps")
	gone := watchConfigMapDeletion(t, ns, "db")

	updateBundle(t, b, keep)
	waitEventContaining(t, b, "Warning", limbov1alpha1.EventDeleteFailed, "ConfigMap "+ns+"/stuck", "refused by the test")
	_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
	deadline := stamp.Add(delay)
	at := gone.wait(t, testenv.DefaultTimeout)
	if at.Before(deadline) {
		t.Fatalf("db deleted at %s, before its deadline %s", at.Format(time.RFC3339Nano), deadline)
	}
	if late := at.Sub(deadline); late > 2*time.Second {
		t.Errorf("db deleted %v after its deadline %s: the failing passes' backoff held its countdown back", late, deadline)
	} else {
		t.Logf("deleted %v after the deadline", late)
	}
	if getObject(t, configMapGVK, ns, "stuck") == nil {
		t.Error("stuck was deleted through the policy that refuses it")
	}
}
