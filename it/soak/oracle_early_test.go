package soak

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Early deletions the oracle accepted (found by review, session 42): an outage
// race excused however long after limbo was back, or with an outage that began
// after the deadline; a release by a pass not Ready, to no adopter, that ended
// the readiness hold for the reaper's delete. Each is a violation now.
func TestOracleEarlyDeletionsNotExcused(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	const bundleUID = types.UID("bbbbbbbb-0000")
	yes := true
	obj := func(rv string, ann map[string]string, controlled bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: rv, Annotations: ann,
			Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
		if controlled {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: bundleUID, Controller: &yes}}
		}
		return m
	}
	delay := func(d string) map[string]string { return map[string]string{limbov1alpha1.AnnotationDeletionDelay: d} }
	stamped := func(d string, at time.Time) map[string]string {
		return map[string]string{limbov1alpha1.AnnotationDeletionDelay: d, limbov1alpha1.AnnotationDeletionTimestamp: at.Format(time.RFC3339)}
	}
	// start: declared at 10, created at 11 (delay 6s), undeclared at 20 at base, stamped at 21 (base).
	start := func() *oracle {
		o := newOracle()
		o.declared("b0", 10, "b0-r0")
		o.observe(watch.Added, obj("11", delay("6s"), true), base.Add(-time.Minute))
		o.undeclared("b0", 20, base, "b0-r0")
		o.observe(watch.Modified, obj("21", stamped("6s", base), true), base.Add(50*time.Millisecond))
		return o
	}
	for _, tt := range []struct {
		name string
		run  func(o *oracle)
	}{{
		// Re-added at base+1 s; a 1 s kube-apiserver outage at base+2 s (limbo
		// back at base+4 s by effectiveEnd), two seconds before the deadline;
		// limbo deletes it 30 s later, still stamped: it saw the declaration
		// 26 s before.
		name: "outage race: deleted long after limbo was back",
		run: func(o *oracle) {
			o.declared("b0", 25, "b0-r0")
			o.objects["b0-r0"].desired[1].since = base.Add(time.Second)
			o.outages = append(o.outages, outage{what: outageAPIServer, start: base.Add(2 * time.Second), end: base.Add(3 * time.Second)})
			o.observe(watch.Deleted, obj("30", stamped("6s", base), true), base.Add(30*time.Second))
		},
	}, {
		// Re-added at base+1 s; the outage starts at base+7 s, after the deadline:
		// nothing hid the declaration from limbo for 6 s.
		name: "outage race: outage began after the deadline",
		run: func(o *oracle) {
			o.declared("b0", 25, "b0-r0")
			o.objects["b0-r0"].desired[1].since = base.Add(time.Second)
			o.outages = append(o.outages, outage{what: outageAPIServer, start: base.Add(7 * time.Second), end: base.Add(8 * time.Second)})
			o.observe(watch.Deleted, obj("30", stamped("6s", base), true), base.Add(6100*time.Millisecond))
		},
	}, {
		// Gate not Ready from 25; the not-Ready pass releases the orphan (no
		// Bundle waits to adopt it) at 27, and the reaper deletes it at its
		// deadline while the gate is still not Ready.
		name: "released while not Ready (no adopter), then reaped",
		run: func(o *oracle) {
			o.holdStarted(holdNotReady, bundleUID, 25)
			o.observe(watch.Modified, obj("27", stamped("6s", base), false), base.Add(time.Second))
			o.observe(watch.Deleted, obj("30", stamped("6s", base), false), base.Add(6100*time.Millisecond))
		},
	}, {
		name: "released while waiting to adopt (no adopter of it), then reaped",
		run: func(o *oracle) {
			o.holdStarted(holdAdopting, bundleUID, 25)
			o.observe(watch.Modified, obj("27", stamped("6s", base), false), base.Add(time.Second))
			o.observe(watch.Deleted, obj("30", stamped("6s", base), false), base.Add(6100*time.Millisecond))
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			o := start()
			tt.run(o)
			if len(o.violations) == 0 {
				t.Errorf("no violation (outage races counted: %d)", o.stats.outageRaces)
			}
		})
	}
}
