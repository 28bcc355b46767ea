package softdelete_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A stamp that landed while a policy dropped another of limbo's marks (the
// pending-deletion label) starts a countdown all the same: it is announced —
// the object is deleted at its deadline — and the write fails, saying why.
// Failed without a word, the deletion came with no DeletionScheduled and no
// "stamped" line in the audit trail.
func TestStampAnnouncedWhenOnlyTheLabelIsDropped(t *testing.T) {
	h := newHarness(t, cm("db", map[string]string{delayKey: "1h"}, nil))
	h.engine.Client = interceptor.NewClient(h.client.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if err := c.Patch(ctx, obj, patch, opts...); err != nil {
			return err
		}
		labels := obj.GetLabels()
		delete(labels, limbov1alpha1.LabelPendingDeletion)
		obj.SetLabels(labels)
		return nil
	}})
	out := h.engine.Orphan(context.Background(), bundle(), h.live(t, "db"), nil)
	if !errors.Is(out.Err, softdelete.ErrMarksNotKept) || !strings.Contains(out.Err.Error(), "has no label "+limbov1alpha1.LabelPendingDeletion) {
		t.Errorf("Err = %v, want the label not kept", out.Err)
	}
	if events := h.events(); !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, limbov1alpha1.EventDeletionScheduled) }) {
		t.Errorf("events %q, want %s", events, limbov1alpha1.EventDeletionScheduled)
	}
}
