package soak

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack/openstacksim"
)

// The route oracle is checked on made-up histories: each rule must catch the
// violation it is there for, and let the allowed case pass.
func TestRouteOracleRules(t *testing.T) {
	route := openstacksim.Route{Destination: "198.19.0.0/24", NextHop: "10.180.0.10"}
	id := routeIDOf(route)
	base := time.Now().Truncate(time.Second).Add(-time.Minute) // removals are stamped with time.Now
	tombstone := func(uid string, created time.Time, delay string) *limbov1alpha1.Tombstone {
		return &limbov1alpha1.Tombstone{
			ObjectMeta: metav1.ObjectMeta{Name: "routes-route-gc-1", UID: types.UID(uid + "-0000-4000"), CreationTimestamp: metav1.Time{Time: created},
				Annotations: map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: created.UTC().Format(time.RFC3339), limbov1alpha1.AnnotationDeletionDelay: delay}},
			Spec: limbov1alpha1.TombstoneSpec{Item: limbov1alpha1.ExternalItem{ID: id}},
		}
	}
	remove := func(o *routeOracle, at time.Time) {
		o.routesChanged([]openstacksim.Route{route}, nil)
		o.removals[len(o.removals)-1].at = at // as if removed at
	}
	for _, tc := range []struct {
		name    string
		history func(o *routeOracle) // the hop starts without a server since base
		want    string               // a substring of the violation; empty: none
	}{{
		name: "removed through a Tombstone after its deadline",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base, "2s"), false, base)
			remove(o, base.Add(2100*time.Millisecond))
		},
	}, {
		name: "removed before the deadline",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base, "4s"), false, base)
			remove(o, base.Add(3*time.Second))
		},
		want: "before the deadline",
	}, {
		name: "removed before the deadline, the Tombstone forced: allowed",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base, "4s"), false, base)
			o.forced("routes-route-gc-1", base.Add(time.Second))
			remove(o, base.Add(2*time.Second))
		},
	}, {
		name: "forced before this Tombstone was made: not its force",
		history: func(o *routeOracle) {
			o.forced("routes-route-gc-1", base.Add(-5*time.Second))
			o.observe(tombstone("aaaaaaaa", base, "4s"), false, base)
			remove(o, base.Add(2*time.Second))
		},
		want: "before the deadline",
	}, {
		// A stamp is to the second: the Tombstone made for the route added again
		// looks made before the removal of the previous one's.
		name: "removed through a Tombstone past its deadline as the next one came, in the same second: allowed",
		history: func(o *routeOracle) {
			previous := tombstone("aaaaaaaa", base, "1s")
			o.observe(previous, false, base)
			remove(o, base.Add(1040*time.Millisecond))
			o.observe(previous, true, base.Add(1060*time.Millisecond))
			o.observe(tombstone("bbbbbbbb", base.Add(time.Second), "1s"), false, base.Add(1800*time.Millisecond))
		},
	}, {
		name: "removed before the deadline of either of two Tombstones",
		history: func(o *routeOracle) {
			previous := tombstone("aaaaaaaa", base, "4s")
			o.observe(previous, false, base)
			remove(o, base.Add(1040*time.Millisecond))
			o.observe(previous, true, base.Add(1060*time.Millisecond))
			o.observe(tombstone("bbbbbbbb", base.Add(time.Second), "1s"), false, base.Add(1800*time.Millisecond))
		},
		want: "before the deadline",
	}, {
		name: "removed without a Tombstone",
		history: func(o *routeOracle) {
			remove(o, base.Add(time.Second))
		},
		want: "without a Tombstone",
	}, {
		name: "removed through a Tombstone seen gone before",
		history: func(o *routeOracle) {
			ts := tombstone("aaaaaaaa", base, "0s")
			o.observe(ts, false, base)
			o.observe(ts, true, base.Add(time.Second))
			remove(o, base.Add(5*time.Second))
		},
		want: "without a Tombstone",
	}, {
		name: "removed while its server had been up for long",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base.Add(-time.Minute), "0s"), false, base)
			o.serverUp(id, "srv", time.Now().Add(-10*time.Second))
			o.routesChanged([]openstacksim.Route{route}, nil)
		},
		want: "while server srv had held its next hop",
	}, {
		name: "removed just as its server came: a race, allowed",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base.Add(-time.Minute), "0s"), false, base)
			o.serverUp(id, "srv", time.Now().Add(-time.Second))
			o.routesChanged([]openstacksim.Route{route}, nil)
		},
	}, {
		name: "carried out though its server was back long enough to cancel it",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base, "30s"), false, base)
			o.serverUp(id, "srv", base.Add(5*time.Second))
			o.serverDown(id, base.Add(20*time.Second))
			remove(o, base.Add(31*time.Second))
		},
		want: "though its next hop had a server",
	}, {
		name: "server back long enough, but the controller was down: allowed",
		history: func(o *routeOracle) {
			o.observe(tombstone("aaaaaaaa", base, "30s"), false, base)
			o.serverUp(id, "srv", base.Add(5*time.Second))
			o.outages = append(o.outages, outage{what: outageController, start: base.Add(10 * time.Second), end: base.Add(12 * time.Second)})
			o.serverDown(id, base.Add(20*time.Second))
			remove(o, base.Add(31*time.Second))
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := newRouteOracle()
			o.addHop(route, "", base)
			tc.history(o)
			o.judge(time.Now().Add(time.Hour))
			wantViolation(t, o.violations, tc.want)
		})
	}

	t.Run("at the end: a route of a gone server left, a Tombstone left", func(t *testing.T) {
		o := newRouteOracle()
		o.addHop(route, "", base)
		o.observe(tombstone("aaaaaaaa", base, "1h"), false, base)
		err := o.finalCheck()
		if err == nil || !strings.Contains(err.Error(), "still on the router (leaked)") || !strings.Contains(err.Error(), "Tombstone routes-route-gc-1") {
			t.Errorf("finalCheck = %v, want the leaked route and the Tombstone left", err)
		}
		o.routesChanged([]openstacksim.Route{route}, nil)
		o.observe(tombstone("aaaaaaaa", base, "1h"), true, time.Now())
		if err := o.finalCheck(); err != nil {
			t.Errorf("finalCheck after the removal = %v, want none", err)
		}
	})
}
