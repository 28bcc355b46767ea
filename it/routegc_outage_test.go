package it

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// An OpenStack outage at the deadline loses nothing: the resource shows the
// error, and its Bundle, not Ready, holds the due Tombstone — a half rolled-out
// Bundle never deletes (DESIGN §3, step 6) — so no removal is tried, no route is
// touched, and the Bundle's pendingDeletions entry says the Tombstone is held;
// when OpenStack is back, the orphan goes and everything else stays. (Until
// 2026-11-30 the Tombstone tried the removal at its deadline, failed on the 503,
// and backed off.)
func TestRouteGCOutage(t *testing.T) {
	t.Parallel()
	f, live, orphan := newRouteGCWithOrphan(t, openstacksim.Config{})

	// The delay leaves the plan seconds to fail, and the Bundle to be not
	// Ready, before the deadline.
	f.start("6s")
	ts := f.waitTombstone(orphan, "6s")
	stamp, err := time.Parse(time.RFC3339, ts.Annotations[limbov1alpha1.AnnotationDeletionTimestamp])
	if err != nil {
		t.Fatal(err)
	}
	deadline := stamp.Add(6 * time.Second)
	f.sim.SetOutage("", true)
	f.waitError(`plugin "route-gc"`, "503")
	waitBundle(t, f.bundle, func(cur *limbov1alpha1.Bundle) error {
		for _, pd := range cur.Status.PendingDeletions {
			if pd.Kind == "Tombstone" && pd.Name == ts.Name {
				if !strings.Contains(pd.Message, "held: "+limbov1alpha1.PendingMessageWaitingForReady) {
					return fmt.Errorf("the Tombstone's entry says %q, want it held", pd.Message)
				}
				if !time.Now().After(deadline.Add(time.Second)) {
					return fmt.Errorf("its deadline %s has not passed yet", deadline.Format(time.RFC3339))
				}
				return nil
			}
		}
		return fmt.Errorf("no pendingDeletions entry of Tombstone %s: %+v", ts.Name, cur.Status.PendingDeletions)
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		ts := f.tombstoneOf(orphan)
		if ts == nil {
			return fmt.Errorf("the Tombstone of %s is gone during the outage", routeID(orphan))
		}
		if ts.Status.Attempts != 0 {
			return fmt.Errorf("Tombstone status = %+v, want no attempt while the Bundle is not Ready", ts.Status)
		}
		return f.routesUntouched(live, orphan)()
	})

	f.sim.SetOutage("", false)
	f.waitRouteRemoved(orphan)
	if got := f.routes(); !slices.Equal(got, []openstacksim.Route{live}) {
		t.Errorf("routes after the outage = %v, want only %v", got, live)
	}
	f.waitReady("1 routes in 198.19.0.0/16, 0 orphaned; 1 servers")
}
