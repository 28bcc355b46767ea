package it

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The delay raised on the live object just before its deadline wins: the object
// is not deleted, and its Bundle lists the new deadline.
//
// "Just before the deadline" is made exact with an interceptor of the
// controller's requests: the raise lands once the object is due, ahead of the
// controller's first request about it (its cached copy, which says "due", is
// then stale: the fresh read must see the new delay), or between its fresh read
// and its DELETE (the resourceVersion precondition must refuse the delete). A
// controller that deletes its cached copy with a UID precondition only deletes
// the object in both cases.
func TestRaceDelayRaisedBeforeDeadline(t *testing.T) {
	t.Parallel()
	forEachRacePoint(t, func(t *testing.T, ns string, point racePoint) {
		b, keep, uid := countdownBundle(t, ns)
		race := raceConfigMapDelete(t, ns, "db", point, nil, func(ctx context.Context) error {
			return mergePatchConfigMap(ctx, ns, "db", `{"metadata":{"annotations":{"`+limbov1alpha1.AnnotationDeletionDelay+`":"1h"}}}`)
		})

		updateBundle(t, b, keep)
		_, stamp := waitInLimbo(t, configMapGVK, ns, "db")
		race.wait(t, nil)

		// Decided again on the live object: it waits for the raised delay.
		want := stamp.Add(time.Hour)
		waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
			if err := existsWithUID(t, configMapGVK, ns, "db", uid)(); err != nil {
				return err
			}
			if len(cur.Status.PendingDeletions) != 1 {
				return fmt.Errorf("pendingDeletions = %+v, want db", cur.Status.PendingDeletions)
			}
			pd := cur.Status.PendingDeletions[0]
			if pd.Name != "db" || pd.DeleteAfter == nil || !pd.DeleteAfter.Time.Equal(want) {
				return fmt.Errorf("pendingDeletions = %+v, want db to be deleted after %s", pd, want)
			}
			return nil
		})
		race.checkDecidedOnFreshRead(t, point)
		testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "db", uid))
	})
}
