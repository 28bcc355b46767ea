package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The oracle itself is checked on made-up histories: each rule it enforces
// must catch the violation it is there for, and let the allowed case pass.
func TestOracleRules(t *testing.T) {
	base := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	bundleUID := types.UID("bbbbbbbb-0000")
	meta := func(rv string, annotations map[string]string, controlled bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: rv, Annotations: annotations,
			Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
		if controlled {
			yes := true
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: bundleUID, Controller: &yes}}
		}
		return m
	}
	stamped := func(delay string, stamp time.Time) map[string]string {
		return map[string]string{limbov1alpha1.AnnotationDeletionDelay: delay, limbov1alpha1.AnnotationDeletionTimestamp: stamp.Format(time.RFC3339)}
	}
	tests := []struct {
		name string
		// history acts on the oracle after the object was declared at
		// revision 10 and created at revision 11.
		history func(o *oracle)
		// created is the object as created; nil: final at revision 11.
		created   *metav1.ObjectMeta
		final     metav1.ObjectMeta
		deletedAt time.Time
		want      string // a substring of the violation; empty: none
	}{{
		name:      "deleted at its deadline",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0") },
		final:     meta("30", stamped("2s", base), true),
		deletedAt: base.Add(2100 * time.Millisecond),
	}, {
		name:      "deleted before its deadline",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0") },
		final:     meta("30", stamped("2s", base), true),
		deletedAt: base.Add(1900 * time.Millisecond),
		want:      "before its deadline",
	}, {
		name:      "deleted while declared",
		history:   func(o *oracle) {},
		final:     meta("30", nil, true),
		deletedAt: base,
		want:      "while its Bundle declared it",
	}, {
		name:      "declared again after the deletion's revision: allowed",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0"); o.declared("b0", 31, "b0-r0") },
		final:     meta("30", nil, true),
		deletedAt: base.Add(time.Second),
	}, {
		name: "declared again in limbo, but a kube-apiserver outage hid it until the deadline: a race, allowed",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.declared("b0", 25, "b0-r0")
			o.objects["b0-r0"].desired[1].since = base.Add(500 * time.Millisecond)
			o.outages = append(o.outages, outage{what: outageAPIServer, start: base.Add(600 * time.Millisecond), end: base.Add(5 * time.Second)})
		},
		final:     meta("30", stamped("2s", base), true),
		deletedAt: base.Add(5 * time.Second),
	}, {
		// A restarted controller lists again: it sees the declaration, and
		// cannot have been hidden from it.
		name: "declared again in limbo, deleted after a controller restart: not a race",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.declared("b0", 25, "b0-r0")
			o.objects["b0-r0"].desired[1].since = base.Add(500 * time.Millisecond)
			o.outages = append(o.outages, outage{what: outageController, start: base.Add(600 * time.Millisecond), end: base.Add(5 * time.Second)})
		},
		final:     meta("30", stamped("2s", base), true),
		deletedAt: base.Add(5 * time.Second),
		want:      "while its Bundle declared it",
	}, {
		name: "stamped and deleted while declared, across an outage",
		history: func(o *oracle) {
			o.objects["b0-r0"].desired[0].since = base.Add(-time.Second)
			o.outages = append(o.outages, outage{what: outageController, start: base.Add(-500 * time.Millisecond), end: base.Add(time.Second)})
		},
		final:     meta("30", stamped("0s", base), true),
		deletedAt: base.Add(1100 * time.Millisecond),
		want:      "while its Bundle declared it",
	}, {
		name:      "deleted with a delay but no stamp",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0") },
		final:     meta("30", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "0s"}, true),
		deletedAt: base.Add(time.Second),
		want:      "without a valid",
	}, {
		// An invalid delay on the live object: never deleted (DESIGN §4),
		// whatever its stamp says.
		name:      "deleted while its live delay was invalid",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0") },
		final:     meta("30", stamped("soon", base), true),
		deletedAt: base.Add(time.Hour),
		want:      "deleted with an invalid delay",
	}, {
		// Stamped with a valid delay, made invalid, then valid again at
		// base+5s: the stamp written before stays, so it is due at once.
		name: "its delay made invalid, then valid again: due from the stamp written before, not before the fix",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.touched("cccccccc-0000", base.Add(5*time.Second))
		},
		final:     meta("30", stamped("2s", base), true),
		deletedAt: base.Add(5500 * time.Millisecond),
	}, {
		name:      "deleted late",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0") },
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(3100 * time.Millisecond),
		want:      "more than 2s late",
	}, {
		name: "late across a controller outage: allowed up to 2s after it",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.outages = append(o.outages, outage{what: outageController, start: base.Add(500 * time.Millisecond), end: base.Add(6 * time.Second)})
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(7 * time.Second),
	}, {
		name:    "left behind by --cascade=orphan",
		created: new(meta("11", nil, true)),
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.bundleDeleted("b0", bundleUID, fateOrphan, 20)
		},
		final:     meta("30", stamped("0s", base), false),
		deletedAt: base.Add(time.Second),
		want:      "--cascade=orphan left it behind",
	}, {
		name: "deleted by --cascade=foreground",
		history: func(o *oracle) {
			o.bundleDeleted("b0", bundleUID, fateForeground, 20)
			o.undeclared("b0", 20, base, "b0-r0")
		},
		final:     meta("30", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}, true),
		deletedAt: base,
	}, {
		name:      "forced by the generator while declared",
		history:   func(o *oracle) { o.forcing("cccccccc-0000") },
		final:     meta("30", nil, true),
		deletedAt: base,
	}, {
		name:      "deleted after kubectl limbo cancel",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0"); o.cancelled("b0-r0") },
		final:     metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: "30", Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"}},
		deletedAt: base.Add(time.Hour),
		want:      "cancel",
	}, {
		// A successful cancel proves the object was there at its write, so
		// the deletion came after it, whatever the last state carries (a
		// limbo.dev/bundle label put back after the cancel, say).
		name:      "deleted after kubectl limbo cancel, the Bundle's label on it",
		history:   func(o *oracle) { o.undeclared("b0", 20, base, "b0-r0"); o.cancelled("b0-r0") },
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(1100 * time.Millisecond),
		want:      "cancel",
	}, {
		// The Bundle's deletion with --cascade=foreground excuses only the
		// deletions after it: one at an earlier revision is not the garbage
		// collector's.
		name: "deleted while declared, before the Bundle's deletion with --cascade=foreground",
		history: func(o *oracle) {
			o.bundleDeleted("b0", bundleUID, fateForeground, 40)
			o.undeclared("b0", 40, base, "b0-r0")
		},
		final:     meta("30", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h"}, true),
		deletedAt: base,
		want:      "while its Bundle declared it",
	}, {
		// A standby's kill restarts nothing that acts: the leader's watches
		// may still back off after a kube-apiserver outage.
		name: "late after a kube-apiserver outage, a standby killed meanwhile: allowed",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.outages = append(o.outages, outage{what: outageAPIServer, start: base.Add(500 * time.Millisecond), end: base.Add(10 * time.Second)},
				outage{what: outageController, start: base.Add(11 * time.Second), end: base.Add(11100 * time.Millisecond), stale: true})
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(15 * time.Second),
	}, {
		name: "late after a kube-apiserver outage and a restart afresh",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.outages = append(o.outages, outage{what: outageAPIServer, start: base.Add(500 * time.Millisecond), end: base.Add(10 * time.Second)},
				outage{what: outageController, start: base.Add(11 * time.Second), end: base.Add(11100 * time.Millisecond)})
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(15 * time.Second),
		want:      "more than 2s late",
	}, {
		// A spec error deletes nothing (DESIGN §2): not an orphan whose
		// deadline passed while the spec was invalid.
		name: "deleted past its deadline while the Bundle's spec was invalid",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdInvalidSpec, bundleUID, 25)
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(1100 * time.Millisecond),
		want:      "spec of its Bundle (uid bbbbbbbb) was invalid",
	}, {
		name: "deleted without a delay while the Bundle's spec was invalid (removed by the same edit)",
		history: func(o *oracle) {
			o.undeclared("b0", 25, base, "b0-r0")
			o.holdStarted(holdInvalidSpec, bundleUID, 25)
		},
		final:     meta("30", nil, true),
		deletedAt: base.Add(100 * time.Millisecond),
		want:      "was invalid",
	}, {
		// Released (its owner reference dropped) while the spec was invalid,
		// then deleted: the deletion is still of an object the Bundle
		// controlled, and the release is a write a spec error never makes.
		name: "released while the Bundle's spec was invalid, then deleted",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdInvalidSpec, bundleUID, 25)
			o.observe(watch.Modified, meta("27", stamped("1s", base), false), base.Add(time.Second))
		},
		created:   ptr.To(meta("11", stamped("1s", base), true)),
		final:     meta("30", stamped("1s", base), false),
		deletedAt: base.Add(1100 * time.Millisecond),
		want:      "released while the spec of its Bundle (uid bbbbbbbb) was invalid",
	}, {
		name: "released, not deleted, while the Bundle's spec was invalid",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdInvalidSpec, bundleUID, 25)
			o.observe(watch.Modified, meta("27", stamped("1s", base), false), base.Add(time.Second))
			o.holdEnded(holdInvalidSpec, bundleUID, 28, base.Add(2*time.Second))
		},
		created:   ptr.To(meta("11", stamped("1s", base), true)),
		final:     meta("30", stamped("1s", base), false),
		deletedAt: base.Add(2100 * time.Millisecond),
		want:      "released while the spec of its Bundle (uid bbbbbbbb) was invalid",
	}, {
		// The error held the deletion: it is due once the spec is fixed, and
		// not late before then.
		name: "deleted after the spec was fixed: allowed, due from the fix",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdInvalidSpec, bundleUID, 25)
			o.holdEnded(holdInvalidSpec, bundleUID, 28, base.Add(10*time.Second))
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(10500 * time.Millisecond),
	}, {
		// Another Bundle's error holds nothing of this one's.
		name: "deleted at its deadline while another Bundle's spec was invalid: allowed",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdInvalidSpec, "eeeeeeee-0000", 25)
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(1100 * time.Millisecond),
	}, {
		// Orphans go to the soft-delete engine only when every resource is
		// Ready (DESIGN §3, step 6): not one stamped before the gate went.
		name: "deleted past its deadline while a resource of the Bundle was not Ready",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdNotReady, bundleUID, 25)
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(1100 * time.Millisecond),
		want:      "a resource of its Bundle (uid bbbbbbbb) was not Ready",
	}, {
		name: "deleted without a delay while a resource of the Bundle was not Ready",
		history: func(o *oracle) {
			o.holdStarted(holdNotReady, bundleUID, 15)
			o.undeclared("b0", 20, base, "b0-r0")
		},
		final:     meta("30", nil, true),
		deletedAt: base.Add(100 * time.Millisecond),
		want:      "was not Ready",
	}, {
		name: "deleted once the Bundle was Ready again: allowed, due from then",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdNotReady, bundleUID, 25)
			o.holdEnded(holdNotReady, bundleUID, 28, base.Add(10*time.Second))
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(10500 * time.Millisecond),
	}, {
		// A deleted Bundle is torn down whatever its readiness.
		name: "deleted by the teardown of a Bundle not Ready: allowed",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdNotReady, bundleUID, 25)
			o.bundleDeleted("b0", bundleUID, fateBackground, 28)
		},
		final:     meta("30", nil, true),
		deletedAt: base.Add(100 * time.Millisecond),
	}, {
		name: "deleted at its deadline while another Bundle was not Ready: allowed",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, "b0-r0")
			o.holdStarted(holdNotReady, "eeeeeeee-0000", 25)
		},
		final:     meta("30", stamped("1s", base), true),
		deletedAt: base.Add(1100 * time.Millisecond),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle()
			o.declared("b0", 10, "b0-r0")
			created := tt.final
			created.ResourceVersion = "11"
			if tt.created != nil {
				created = *tt.created
			}
			o.observe(watch.Added, created, base.Add(-time.Minute))
			tt.history(o)
			o.observe(watch.Deleted, tt.final, tt.deletedAt)
			wantViolation(t, o.violations, tt.want)
		})
	}
}

// An orphan that a hold keeps (a spec error, a resource not Ready) is not
// due: checkOverdue does not report it while the hold lasts, and at the end it
// must still exist (it is kept, not leaked); once the hold ends it is due
// again. The Bundle's deletion ends the readiness hold (torn down whatever its
// readiness), not the spec error's.
func TestOracleHeld(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	yes := true
	live := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: "11",
		Annotations:     map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s", limbov1alpha1.AnnotationDeletionTimestamp: base.Format(time.RFC3339)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: "bbbbbbbb-0000", Controller: &yes}}}
	held := func(h *hold) *oracle {
		o := newOracle()
		o.declared("b0", 10, "b0-r0")
		o.observe(watch.Added, live, base)
		o.undeclared("b0", 20, base, "b0-r0")
		o.holdStarted(h, "bbbbbbbb-0000", 21)
		return o
	}
	for _, tt := range []struct {
		h    *hold
		want string
	}{{holdInvalidSpec, "was invalid"}, {holdNotReady, "was not Ready"}} {
		t.Run(tt.h.name, func(t *testing.T) {
			o := held(tt.h)
			o.checkOverdue(time.Now())
			o.finalCheck()
			if len(o.violations) != 0 {
				t.Fatalf("violations %q, want none: the hold keeps the object", o.violations)
			}
			deleted := live
			deleted.ResourceVersion = "30"
			o.observe(watch.Deleted, deleted, time.Now())
			if got := strings.Join(o.violations, "\n"); !strings.Contains(got, tt.want) || !strings.Contains(got, "uid cccccccc") {
				t.Errorf("violations %q, want one saying the object was deleted while its Bundle %s", got, tt.want)
			}

			ended := held(tt.h)
			ended.holdEnded(tt.h, "bbbbbbbb-0000", 22, time.Now().Add(-10*time.Second))
			ended.checkOverdue(time.Now())
			if len(ended.violations) != 1 || !strings.Contains(ended.violations[0], "still exists") {
				t.Errorf("violations %q, want one saying the object still exists 10 s after the hold ended", ended.violations)
			}

			// The deletion of the Bundle 10 s ago.
			torn := held(tt.h)
			torn.bundleDeleted("b0", "bbbbbbbb-0000", fateBackground, 22)
			torn.checkOverdue(time.Now().Add(10 * time.Second))
			if got := len(torn.violations); (tt.h == holdNotReady) != (got == 1) {
				t.Errorf("violations %q after the Bundle's deletion; want one saying the object still exists only for the readiness hold", torn.violations)
			}
		})
	}
}

// An object whose live delay is invalid is never due: checkOverdue does not
// report it and at the end it must still exist (kept, not leaked). Once a later
// edit makes the delay valid, it is due from its stamp (written before the
// delay became invalid), and not before that edit.
func TestOracleInvalidLiveDelay(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	live := func(rv, delay string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: rv,
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: delay, limbov1alpha1.AnnotationDeletionTimestamp: base.Format(time.RFC3339)},
			Labels:      map[string]string{limbov1alpha1.LabelBundle: "b0"}}
	}
	invalid := func() *oracle {
		o := newOracle()
		o.declared("b0", 10, "b0-r0")
		o.observe(watch.Added, live("11", "1s"), base)
		o.undeclared("b0", 20, base, "b0-r0")
		o.begin("b0") // invalid-live-delay is an operation of b0 (mutate)
		o.observe(watch.Modified, live("21", "-5s"), base.Add(100*time.Millisecond))
		o.touched("cccccccc-0000", base.Add(100*time.Millisecond))
		o.end("b0")
		return o
	}

	o := invalid()
	o.checkOverdue(time.Now())
	o.finalCheck()
	if len(o.violations) != 0 {
		t.Fatalf("violations %q, want none: an invalid delay keeps the object", o.violations)
	}
	o.observe(watch.Deleted, live("30", "-5s"), time.Now())
	if got := strings.Join(o.violations, "\n"); !strings.Contains(got, "b0-r0 (uid cccccccc, revision 30") || !strings.Contains(got, "deleted with an invalid delay") {
		t.Errorf("violations %q, want one saying b0-r0 was deleted with an invalid delay", got)
	}

	// Never stamped either.
	unstamped := live("22", "soon")
	delete(unstamped.Annotations, limbov1alpha1.AnnotationDeletionTimestamp)
	stamped := live("23", "soon")
	o = invalid()
	o.observe(watch.Modified, unstamped, time.Now())
	o.observe(watch.Modified, stamped, time.Now())
	if got := strings.Join(o.violations, "\n"); !strings.Contains(got, "b0-r0 (uid cccccccc, revision 23) stamped although its delay \"soon\" is invalid") {
		t.Errorf("violations %q, want one saying b0-r0 was stamped with an invalid delay", got)
	}

	// Made valid 10 s ago: due from the old stamp, but not before the edit.
	fixed := invalid()
	fixedAt := time.Now().Add(-10 * time.Second)
	fixed.begin("b0")
	fixed.observe(watch.Modified, live("25", "2s"), fixedAt)
	fixed.touched("cccccccc-0000", fixedAt)
	fixed.end("b0")
	fixed.checkOverdue(time.Now())
	if len(fixed.violations) != 1 || !strings.Contains(fixed.violations[0], "still exists 10s after it was due") {
		t.Errorf("violations %q, want one saying the object still exists 10 s after its delay was made valid", fixed.violations)
	}
}

// While a hold is in force, limbo writes no limbo.dev/deletionTimestamp on
// what the Bundle controls: an orphan is not stamped while the spec is invalid
// (limbo writes nothing) or while a resource is not Ready (the orphans wait
// for the soft-delete engine). kubectl limbo expedite moves a stamp, and a
// teardown stamps what it releases: those are allowed.
func TestOracleStampedWhileHeld(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	bundleUID := types.UID("bbbbbbbb-0000")
	yes := true
	object := func(rv string, stamp time.Time, controlled bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: rv,
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "4s"}, Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
		if !stamp.IsZero() {
			m.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = stamp.Format(time.RFC3339)
		}
		if controlled {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: bundleUID, Controller: &yes}}
		}
		return m
	}
	for _, tt := range []struct {
		name string
		// first is the object before the hold (created at revision 11);
		// history acts on the oracle after it (the hold starts at revision 25),
		// then the object is seen as next.
		first   metav1.ObjectMeta
		history func(o *oracle)
		next    metav1.ObjectMeta
		relist  bool
		want    string
	}{{
		name:  "stamped while a resource was not Ready",
		first: object("11", time.Time{}, true), next: object("30", base, true),
		history: func(o *oracle) { o.holdStarted(holdNotReady, bundleUID, 25) },
		want:    "b0-r0 (uid cccccccc, revision 30) stamped while a resource of its Bundle (uid bbbbbbbb) was not Ready",
	}, {
		name:  "stamped while the spec was invalid",
		first: object("11", time.Time{}, true), next: object("30", base, true),
		history: func(o *oracle) { o.holdStarted(holdInvalidSpec, bundleUID, 25) },
		want:    "stamped while the spec of its Bundle (uid bbbbbbbb) was invalid",
	}, {
		name:  "stamped once the Bundle was Ready again: allowed",
		first: object("11", time.Time{}, true), next: object("30", base, true),
		history: func(o *oracle) {
			o.holdStarted(holdNotReady, bundleUID, 25)
			o.holdEnded(holdNotReady, bundleUID, 28, base)
		},
	}, {
		name:  "stamped and released by the teardown of a Bundle not Ready: allowed",
		first: object("11", time.Time{}, true), next: object("30", base, false),
		history: func(o *oracle) {
			o.holdStarted(holdNotReady, bundleUID, 25)
			o.bundleDeleted("b0", bundleUID, fateBackground, 28)
		},
	}, {
		name:  "a stamp moved (kubectl limbo expedite) while a resource was not Ready: allowed",
		first: object("11", base, true), next: object("30", base.Add(-4*time.Second), true),
		history: func(o *oracle) {
			o.holdStarted(holdNotReady, bundleUID, 25)
			o.touched("cccccccc-0000", base.Add(time.Second))
		},
	}, {
		name:  "stamped in a watch gap that began in the hold",
		first: object("26", time.Time{}, true), next: object("30", base, true), relist: true,
		history: func(o *oracle) { o.holdStarted(holdNotReady, bundleUID, 25) },
		want:    "stamped while a resource of its Bundle (uid bbbbbbbb) was not Ready",
	}, {
		name:  "stamped in a watch gap that began before the hold: allowed (it may have come first)",
		first: object("11", time.Time{}, true), next: object("30", base, true), relist: true,
		history: func(o *oracle) { o.holdStarted(holdNotReady, bundleUID, 25) },
	}} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle()
			o.declared("b0", 10, "b0-r0")
			o.observe(watch.Added, tt.first, base)
			o.undeclared("b0", 20, base, "b0-r0")
			tt.history(o)
			if tt.relist {
				o.relisted("27", &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "30"}, Items: []corev1.ConfigMap{{ObjectMeta: tt.next}}}, base.Add(time.Second))
			} else {
				o.observe(watch.Modified, tt.next, base.Add(time.Second))
			}
			wantViolation(t, o.violations, tt.want)
		})
	}
}

// A background teardown deletes an object only once every object that
// depends on it is gone or released (reverse dependency order, DESIGN §3).
// b0-r1 depends on b0-r0.
func TestOracleTeardownOrder(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	bundleUID := types.UID("bbbbbbbb-0000")
	yes := true
	object := func(name, uid, rv string, controlled bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv, Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
		if controlled {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: bundleUID, Controller: &yes}}
		}
		return m
	}
	dependency, dependent := object("b0-r0", "cccccccc-0000", "11", true), object("b0-r1", "dddddddd-0000", "12", true)
	for _, tt := range []struct {
		name string
		fate fate
		// before happens between the Bundle's deletion and the dependency's.
		before func(o *oracle)
		want   string
	}{
		{name: "the dependency deleted first", fate: fateBackground, before: func(*oracle) {}, want: "which depends on it, was still controlled"},
		{name: "the dependency released first", fate: fateBackground, before: func(o *oracle) {
			o.observe(watch.Modified, object("b0-r0", "cccccccc-0000", "25", false), base.Add(time.Second))
		}, want: "b0-r0 (uid cccccccc, revision 25) released by its Bundle's teardown while b0-r1"},
		{name: "the dependent deleted first: allowed", fate: fateBackground, before: func(o *oracle) {
			o.observe(watch.Deleted, object("b0-r1", "dddddddd-0000", "25", true), base.Add(time.Second))
		}},
		{name: "the dependent released first: allowed", fate: fateBackground, before: func(o *oracle) {
			o.observe(watch.Modified, object("b0-r1", "dddddddd-0000", "25", false), base.Add(time.Second))
		}},
		{name: "--cascade=foreground (the garbage collector's order): allowed", fate: fateForeground, before: func(*oracle) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle()
			o.declared("b0", 10, "b0-r0", "b0-r1")
			o.observe(watch.Added, dependency, base)
			o.observe(watch.Added, dependent, base)
			o.bundleDeleted("b0", bundleUID, tt.fate, 20)
			o.teardownOrder(bundleUID, map[string][]string{"b0-r0": {"b0-r1"}})
			o.undeclared("b0", 20, base, "b0-r0", "b0-r1")
			tt.before(o)
			deleted := dependency
			deleted.ResourceVersion = "30"
			o.observe(watch.Deleted, deleted, base.Add(2*time.Second))
			wantViolation(t, o.violations, tt.want)
		})
	}
}

// An object that stays past its deadline is reported by checkOverdue, and at
// the end as neither lost nor leaked twice.
func TestOracleOverdue(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	o := newOracle()
	o.declared("b0", 10, "b0-r0")
	o.observe(watch.Added, metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: "11",
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s", limbov1alpha1.AnnotationDeletionTimestamp: base.Format(time.RFC3339)}}, base)
	o.undeclared("b0", 20, base, "b0-r0")
	o.checkOverdue(time.Now())
	o.finalCheck()
	if len(o.violations) != 1 || !strings.Contains(o.violations[0], "still exists") {
		t.Errorf("violations %q, want one saying the object still exists after its deadline", o.violations)
	}
}

// A pass behind its cache can create an object for a Bundle that was already
// deleted with --cascade=orphan: it is that Bundle's, left behind like the
// rest — never due, and deleting it breaks the contract as for the others.
func TestOracleCreatedAfterOrphanCascade(t *testing.T) {
	bundleUID := types.UID("bbbbbbbb-0000")
	yes := true
	late := metav1.ObjectMeta{Name: "b0-r0", UID: "dddddddd-0000", ResourceVersion: "21",
		Annotations:     map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"},
		Labels:          map[string]string{limbov1alpha1.LabelBundle: "b0"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: bundleUID, Controller: &yes}}}
	base := time.Now().Add(-time.Minute)
	o := newOracle()
	o.declared("b0", 10, "b0-r0")
	o.undeclared("b0", 19, base, "b0-r0")
	o.bundleDeleted("b0", bundleUID, fateOrphan, 20)
	o.observe(watch.Added, late, base.Add(time.Second))
	o.checkOverdue(time.Now())
	o.finalCheck()
	if len(o.violations) != 0 {
		t.Fatalf("violations %q, want none: --cascade=orphan left it behind", o.violations)
	}
	deleted := late
	deleted.ResourceVersion = "30"
	o.observe(watch.Deleted, deleted, time.Now())
	if got := strings.Join(o.violations, "\n"); !strings.Contains(got, "--cascade=orphan left it behind") {
		t.Errorf("violations %q, want one saying --cascade=orphan left it behind", got)
	}
}

// The watch-gap re-list judges every live record whose UID the list lacks as
// deleted in the gap, before it takes in what the list holds: an object
// deleted and created again under the same name in the gap is two
// incarnations, and the first one's deletion is judged too.
func TestOracleResyncRecreatedInGap(t *testing.T) {
	old := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: "11",
		Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
	recreated := metav1.ObjectMeta{Name: "b0-r0", UID: "dddddddd-0000", ResourceVersion: "45",
		Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
	relist := func(o *oracle) {
		cs := fake.NewClientset()
		cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "50"},
				Items: []corev1.ConfigMap{{ObjectMeta: recreated}}}, nil
		})
		if got := o.resync(context.Background(), cs, "ns", "20"); got != "50" {
			t.Fatalf("resync returned revision %q, want 50", got)
		}
	}

	t.Run("deleted while declared, created again in the gap", func(t *testing.T) {
		o := newOracle()
		o.declared("b0", 10, "b0-r0")
		o.observe(watch.Added, old, time.Now())
		relist(o)
		if !slices.ContainsFunc(o.violations, func(v string) bool {
			return strings.Contains(v, "uid cccccccc") && strings.Contains(v, "while its Bundle declared it")
		}) {
			t.Errorf("violations %q, want one saying the first incarnation was deleted while declared", o.violations)
		}
		if v := o.view("b0-r0"); !v.exists || v.uid != recreated.UID {
			t.Errorf("live incarnation %+v, want uid %s", v, recreated.UID)
		}
	})

	// The deletion fell somewhere in the gap: declared again within it, the
	// object may have been deleted before (at its deadline), then created
	// again by limbo. That is no violation.
	t.Run("deleted in the gap, declared again within it: allowed", func(t *testing.T) {
		o := newOracle()
		o.declared("b0", 10, "b0-r0")
		o.observe(watch.Added, old, time.Now())
		o.undeclared("b0", 20, time.Now(), "b0-r0")
		o.declared("b0", 30, "b0-r0")
		relist(o)
		if len(o.violations) != 0 {
			t.Errorf("violations %q, want none: the deletion may have come before the declaration", o.violations)
		}
		if o.stats.engineDeletions != 1 {
			t.Errorf("%d deletions by limbo judged, want 1", o.stats.engineDeletions)
		}
	})
}

// The generator's own DELETE excuses a deletion only when it went through: one
// refused (the object gone already, or another incarnation) leaves the object
// limbo's, and a deletion by limbo is judged.
func TestOracleForceDeleteRefused(t *testing.T) {
	live := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: "11",
		Labels: map[string]string{limbov1alpha1.LabelBundle: "b0"}}
	deleted := live
	deleted.ResourceVersion = "30"
	for _, tt := range []struct {
		name string
		// refuse is the DELETE's error; nil: accepted.
		refuse error
		// watched: the watch sees the deletion before the DELETE returns.
		watched bool
		want    string
	}{
		{name: "refused: not found", refuse: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "b0-r0"), want: "while its Bundle declared it"},
		{name: "refused: UID precondition", refuse: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "b0-r0", fmt.Errorf("uid mismatch")), want: "while its Bundle declared it"},
		{name: "accepted: allowed"},
		{name: "accepted, seen before the DELETE returned: allowed", watched: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle()
			o.declared("b0", 10, "b0-r0")
			o.observe(watch.Added, live, time.Now())
			cs := fake.NewClientset()
			cs.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tt.watched {
					o.observe(watch.Deleted, deleted, time.Now())
				}
				return true, nil, tt.refuse
			})
			g := &generator{oracle: o, namespace: "ns", clientset: cs, pause: &sync.RWMutex{}}
			s := &slot{name: "b0", rng: rand.New(rand.NewPCG(1, 1))}
			if !g.forceDelete(context.Background(), s) {
				t.Fatal("forceDelete found nothing to delete")
			}
			if !tt.watched {
				// limbo's deletion (refused), or the generator's (accepted).
				o.observe(watch.Deleted, deleted, time.Now())
			}
			wantViolation(t, o.violations, tt.want)
		})
	}
}

// An object handed over from one Bundle (b0) to another (b3), which declares it
// to adopt it: from that write on it is never deleted, by b0's countdown or
// teardown, until it leaves b3 in turn (but by --cascade=foreground while b0
// still controls it: "everything now"); b3 hands none of its orphans to the
// soft-delete engine until it is seen controlling it; and at the end it must
// be b3's.
func TestOracleHandOver(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	giver, adopter := types.UID("bbbbbbbb-0000"), types.UID("dddddddd-0000")
	yes := true
	object := func(name, uid, rv string, controller types.UID, annotations map[string]string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv, Annotations: annotations, Labels: map[string]string{}}
		if controller != "" {
			bundle := map[types.UID]string{giver: "b0", adopter: "b3"}[controller]
			m.Labels[limbov1alpha1.LabelBundle] = bundle
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: bundle, UID: controller, Controller: &yes}}
		} else {
			m.Labels[limbov1alpha1.LabelBundle] = "b0" // released by b0
		}
		return m
	}
	stamped := func(delay string) map[string]string {
		return map[string]string{limbov1alpha1.AnnotationDeletionDelay: delay, limbov1alpha1.AnnotationDeletionTimestamp: base.Format(time.RFC3339)}
	}
	// The object is b5-r2, handed over to b0 before: its name says nothing of
	// the Bundle that controls it.
	const name = "b5-r2"
	handed := func(rv string, controller types.UID) metav1.ObjectMeta {
		return object(name, "cccccccc-0000", rv, controller, stamped("1s"))
	}
	// swap: b0 drops b5-r2 and declares b3-r1 to adopt it at revision 30, b3
	// drops b3-r1 and declares b5-r2 at 31.
	swap := func(o *oracle) {
		o.observe(watch.Modified, object(name, "cccccccc-0000", "14", giver, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"}), base.Add(-time.Minute))
		o.declared("b3", 15, "b3-r1")
		o.observe(watch.Added, object("b3-r1", "ffffffff-0000", "16", adopter, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"}), base.Add(-time.Minute))
		o.undeclared("b0", 30, base, name)
		o.declared("b0", 30, "b3-r1")
		o.adopting("b0", giver, 30, "b3-r1")
		o.undeclared("b3", 31, base, "b3-r1")
		o.declared("b3", 31, name)
		o.adopting("b3", adopter, 31, name)
	}
	// b3-r0, b3's orphan counting down since base, goes (forced: not
	// judged), so that a case checks what is overdue after it.
	gone := func(o *oracle) {
		o.forcing("eeeeeeee-0000")
		o.observe(watch.Deleted, object("b3-r0", "eeeeeeee-0000", "13", adopter, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "4s"}), base)
	}
	for _, tt := range []struct {
		name    string
		history func(o *oracle)
		want    string // a substring of the violations; empty: none
		// counts are hand-overs by variant the oracle must have counted.
		counts map[string]int
		// after, if set, checks the oracle once history ran.
		after func(t *testing.T, o *oracle)
	}{{
		name: "add-first, deleted by the giver's countdown",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Deleted, handed("40", giver), base.Add(2*time.Second))
		},
		want: "b5-r2 (uid cccccccc, revision 40, annotations map[controller:bbbbbbbb deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b0]) deleted while its Bundle declared it",
	}, {
		name: "remove-first, deleted by the giver's countdown after the adopter's write",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, name)
			o.declared("b3", 25, name)
			o.adopting("b3", adopter, 25, name)
			o.observe(watch.Deleted, handed("30", giver), base.Add(2*time.Second))
		},
		want: "deleted while its Bundle declared it",
	}, {
		name: "remove-first, deleted before the adopter's write: allowed",
		history: func(o *oracle) {
			o.undeclared("b0", 20, base, name)
			o.observe(watch.Deleted, handed("22", giver), base.Add(1100*time.Millisecond))
			o.declared("b3", 25, name)
			o.adopting("b3", adopter, 25, name)
		},
	}, {
		name: "handed over, adopted, then deleted by the adopter's countdown: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("35", ""), base.Add(time.Second))
			o.observe(watch.Modified, object(name, "cccccccc-0000", "36", adopter, nil), base.Add(time.Second))
			o.undeclared("b3", 40, base.Add(2*time.Second), name)
			o.observe(watch.Deleted, object(name, "cccccccc-0000", "45", adopter, stamped("1s")), base.Add(2100*time.Millisecond))
		},
	}, {
		// --cascade=orphan leaves behind what no other Bundle takes.
		name: "the giver deleted with --cascade=orphan: adopted, not left behind; then deleted by the adopter's countdown: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.bundleDeleted("b0", giver, fateOrphan, 32)
			o.observe(watch.Modified, handed("33", ""), base.Add(time.Second))
			o.observe(watch.Modified, object(name, "cccccccc-0000", "34", adopter, nil), base.Add(time.Second))
			o.undeclared("b3", 40, base.Add(2*time.Second), name)
			o.observe(watch.Deleted, object(name, "cccccccc-0000", "45", adopter, stamped("1s")), base.Add(2100*time.Millisecond))
		},
	}, {
		// Seen before the deletion of the Bundle is recorded: judged after.
		name: "the giver deleted with --cascade=foreground before it handed the object over: the garbage collector's, allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.begin("b0")
			o.observe(watch.Deleted, handed("35", giver), base.Add(time.Second))
			o.bundleDeleted("b0", giver, fateForeground, 32)
			o.end("b0")
		},
	}, {
		name: "the adopter's orphan stamped while it waited to adopt",
		history: func(o *oracle) {
			o.adopting("b3", adopter, 30, name)
			o.observe(watch.Modified, object("b3-r0", "eeeeeeee-0000", "32", adopter, stamped("4s")), base.Add(time.Second))
		},
		want: "b3-r0 (uid eeeeeeee, revision 32) stamped while a resource of its Bundle (uid dddddddd) waited to adopt an object",
	}, {
		// A swap: b0 waits for b3-r0 as b3 waits for b5-r2. A hand-over deletes
		// nothing: neither Bundle's readiness holds it back.
		name: "the adopter's orphan stamped while it waited to adopt, another Bundle waiting for that orphan: allowed",
		history: func(o *oracle) {
			o.adopting("b3", adopter, 30, name)
			o.declared("b0", 31, "b3-r0")
			o.adopting("b0", giver, 31, "b3-r0")
			o.observe(watch.Modified, object("b3-r0", "eeeeeeee-0000", "32", adopter, stamped("4s")), base.Add(time.Second))
		},
	}, {
		name: "the adopter's orphan stamped once it adopted: allowed",
		history: func(o *oracle) {
			o.adopting("b3", adopter, 30, name)
			o.observe(watch.Modified, object(name, "cccccccc-0000", "31", adopter, nil), base.Add(time.Second))
			o.observe(watch.Modified, object("b3-r0", "eeeeeeee-0000", "32", adopter, stamped("4s")), base.Add(time.Second))
		},
	}, {
		// The adoption's revision is somewhere in the gap: the stamp may have
		// come after it.
		name: "adopted in a watch gap, the adopter's orphan stamped in it: allowed",
		history: func(o *oracle) {
			o.adopting("b3", adopter, 30, name)
			o.observe(watch.Modified, object("b3-r0", "eeeeeeee-0000", "31", adopter, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "4s"}), base)
			o.relisted("31", &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "40"}, Items: []corev1.ConfigMap{
				{ObjectMeta: object("b3-r0", "eeeeeeee-0000", "38", adopter, stamped("4s"))},
				{ObjectMeta: object(name, "cccccccc-0000", "35", adopter, nil)},
			}}, base.Add(time.Second))
		},
	}, {
		name: "handed over before its deadline",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("35", ""), base.Truncate(time.Second).Add(500*time.Millisecond)) // the stamp is to the second
		},
		want: "b5-r2 (uid cccccccc, revision 35, annotations map[deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b0]) handed over 500ms before its deadline",
	}, {
		name: "handed over without going through limbo (no stamp)",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, object(name, "cccccccc-0000", "35", "", map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"}), base.Add(2*time.Second))
		},
		want: "handed over without a valid limbo.dev/deletionTimestamp although it has a delay of 1s",
	}, {
		// Released by its teardown: at once, deadline or not.
		name: "released by the giver's teardown before the deadline: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.begin("b0")
			o.observe(watch.Modified, handed("35", ""), base.Add(500*time.Millisecond))
			o.bundleDeleted("b0", giver, fateBackground, 33)
			o.end("b0")
		},
	}, {
		// A hand-over deletes nothing: it proceeds at the deadline while the
		// giver is not Ready (session 33), and the adopter adopts it.
		name: "the giver not Ready, handed over at the deadline and adopted: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.holdStarted(holdNotReady, giver, 33)
			o.observe(watch.Modified, handed("35", ""), base.Add(1100*time.Millisecond))
			o.observe(watch.Modified, object(name, "cccccccc-0000", "36", adopter, nil), base.Add(1200*time.Millisecond))
			gone(o)
			o.checkOverdue(time.Now().Add(time.Minute))
			o.finalCheck()
		},
		counts: map[string]int{handOverGiverNotReady: 1, handOverAdopted: 1},
	}, {
		name: "the giver not Ready, not handed over: not adopted in time",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.holdStarted(holdNotReady, giver, 33)
			o.checkOverdue(time.Now())
			if len(o.violations) > 0 {
				return // not yet: the adopter's write was a moment ago
			}
			o.checkOverdue(time.Now().Add(adoptionTolerance + time.Second))
		},
		want: "not adopted in time: b5-r2 (uid cccccccc, annotations map[controller:bbbbbbbb deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b0]) is not controlled by Bundle b3 (uid dddddddd), which declared it to adopt it at revision 30",
	}, {
		name: "released, not adopted in time",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("35", ""), time.Now())
			o.checkOverdue(time.Now().Add(adoptionTolerance + time.Second))
		},
		want: "not adopted in time: b5-r2",
	}, {
		// It writes nothing until the error is fixed: due from the fix.
		name: "not adopted while the adopter's spec is invalid: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.holdStarted(holdInvalidSpec, adopter, 31)
			o.undeclared("b0", 32, base, name)
			o.observe(watch.Modified, handed("35", ""), base.Add(2*time.Second))
			o.checkOverdue(time.Now().Add(time.Minute))
			o.holdEnded(holdInvalidSpec, adopter, 40, time.Now().Add(time.Minute))
			o.checkOverdue(time.Now().Add(time.Minute + adoptionTolerance - time.Second))
		},
	}, {
		// The adopter went before the hand-over: the giver, not Ready, holds
		// the object as any other orphan (stillOrphan answers "not claimed").
		name: "the giver not Ready, the adopter gone before the hand-over, deleted by the giver",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.holdStarted(holdNotReady, giver, 33)
			o.bundleDeleted("b3", adopter, fateBackground, 34)
			o.undeclared("b3", 34, base.Add(500*time.Millisecond), name)
			o.observe(watch.Deleted, handed("40", giver), base.Add(2*time.Second))
		},
		want: "b5-r2 (uid cccccccc, revision 40, annotations map[controller:bbbbbbbb deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b0]) deleted while a resource of its Bundle (uid bbbbbbbb) was not Ready",
	}, {
		name: "the giver not Ready, the adopter gone before the hand-over, kept: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.holdStarted(holdNotReady, giver, 33)
			o.bundleDeleted("b3", adopter, fateBackground, 34)
			o.undeclared("b3", 34, base.Add(500*time.Millisecond), name)
			gone(o)
			o.checkOverdue(time.Now().Add(time.Minute))
			o.finalCheck()
		},
	}, {
		// Release ends hold: the released object is the reaper's, which
		// deletes it once due when no Bundle declares it to adopt it any more.
		name: "the giver not Ready, handed over, the adopter gone before it adopted, deleted by the reaper: allowed",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.holdStarted(holdNotReady, giver, 33)
			o.observe(watch.Modified, handed("35", ""), base.Add(1100*time.Millisecond))
			o.bundleDeleted("b3", adopter, fateBackground, 36)
			o.undeclared("b3", 36, base.Add(1500*time.Millisecond), name)
			o.observe(watch.Deleted, handed("40", ""), base.Add(2*time.Second))
		},
		counts: map[string]int{handOverGiverNotReady: 1},
	}, {
		name: "a swap: the dropped object stamped before the other Bundle declares it",
		history: func(o *oracle) {
			o.observe(watch.Modified, object(name, "cccccccc-0000", "14", giver, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"}), base.Add(-time.Minute))
			o.declared("b3", 15, "b3-r1")
			o.undeclared("b0", 30, base, name)
			o.declared("b0", 30, "b3-r1")
			o.adopting("b0", giver, 30, "b3-r1")
			o.observe(watch.Modified, handed("31", giver), base.Add(100*time.Millisecond))
		},
		want: "b5-r2 (uid cccccccc, revision 31) stamped while a resource of its Bundle (uid bbbbbbbb) waited to adopt an object",
	}, {
		name: "a swap: the dropped object deleted before the other Bundle declares it",
		history: func(o *oracle) {
			o.declared("b3", 15, "b3-r1")
			o.undeclared("b0", 30, base, name)
			o.declared("b0", 30, "b3-r1")
			o.adopting("b0", giver, 30, "b3-r1")
			o.observe(watch.Deleted, object(name, "cccccccc-0000", "31", giver, nil), base.Add(100*time.Millisecond))
		},
		want: "deleted while a resource of its Bundle (uid bbbbbbbb) waited to adopt an object",
	}, {
		name: "a swap: an object deleted by the Bundle it leaves",
		history: func(o *oracle) {
			swap(o)
			o.observe(watch.Modified, object("b3-r1", "ffffffff-0000", "32", adopter, stamped("1s")), base.Add(100*time.Millisecond))
			o.observe(watch.Deleted, object("b3-r1", "ffffffff-0000", "40", adopter, stamped("1s")), base.Add(1100*time.Millisecond))
		},
		want: "b3-r1 (uid ffffffff, revision 40, annotations map[controller:dddddddd deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b3]) deleted while its Bundle declared it",
	}, {
		name: "a swap: stamped by both Bundles, not Ready, handed over at the deadlines and adopted: allowed",
		history: func(o *oracle) {
			swap(o)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.observe(watch.Modified, object("b3-r1", "ffffffff-0000", "33", adopter, stamped("1s")), base.Add(100*time.Millisecond))
			o.observe(watch.Modified, handed("34", ""), base.Add(1100*time.Millisecond))
			o.observe(watch.Modified, object("b3-r1", "ffffffff-0000", "35", "", stamped("1s")), base.Add(1100*time.Millisecond))
			o.observe(watch.Modified, object("b3-r1", "ffffffff-0000", "36", giver, nil), base.Add(1200*time.Millisecond))
			o.observe(watch.Modified, object(name, "cccccccc-0000", "37", adopter, nil), base.Add(1200*time.Millisecond))
			gone(o)
			o.checkOverdue(time.Now().Add(time.Minute))
			o.finalCheck()
		},
		counts: map[string]int{handOverAdopted: 2},
	}, {
		name: "a swap: one object never handed over",
		history: func(o *oracle) {
			swap(o)
			o.observe(watch.Modified, handed("32", giver), base.Add(100*time.Millisecond))
			o.observe(watch.Modified, object("b3-r1", "ffffffff-0000", "33", adopter, stamped("1s")), base.Add(100*time.Millisecond))
			o.observe(watch.Modified, handed("34", ""), base.Add(1100*time.Millisecond))
			o.observe(watch.Modified, object(name, "cccccccc-0000", "37", adopter, nil), base.Add(1200*time.Millisecond))
			o.checkOverdue(time.Now().Add(adoptionTolerance + time.Second))
		},
		want: "not adopted in time: b3-r1 (uid ffffffff, annotations map[controller:dddddddd deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b3]) is not controlled by Bundle b0 (uid bbbbbbbb), which declared it to adopt it at revision 30",
	}, {
		// Each not Ready (its resource of the other's object is
		// ControlledByOther), and the readiness gate holding hand-overs too:
		// they wait for each other for good (before session 33).
		name: "a swap: neither object stamped",
		history: func(o *oracle) {
			swap(o)
			o.checkOverdue(time.Now())
			if len(o.violations) > 0 {
				return // not yet: due a second (the delay) after the second write
			}
			o.checkOverdue(time.Now().Add(time.Second + adoptionTolerance + time.Second))
		},
		want: "not adopted in time: b3-r1 (uid ffffffff, annotations map[controller:dddddddd deletionDelay:1s label:bundle:b3]) is not controlled by Bundle b0",
	}, {
		// b0 drops it after b3's write: not handed over before that.
		name: "add-first, not dropped yet: no adoption due",
		history: func(o *oracle) {
			o.observe(watch.Modified, object(name, "cccccccc-0000", "14", giver, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s"}), base.Add(-time.Minute))
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			gone(o)
			o.checkOverdue(time.Now().Add(time.Minute))
		},
	}, {
		// The run's final wait (pendingUntil): b3's orphan b3-r0 is held while
		// b3 waits to adopt b5-r2, and due 4 s after the adoption; a wait that
		// ended while it was held judged it leaked a moment after the adoption
		// (seed 808322342).
		name: "the final wait lasts until the adoption, then until what its hold kept is due",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
		},
		after: func(t *testing.T, o *oracle) {
			now := time.Now()
			if until, n := o.pendingUntil(now); n != 1 || until.IsZero() {
				t.Errorf("waiting for the adoption: pendingUntil = %v, %d; want the adoption's due time, 1", until, n)
			}
			adopted := now.Add(time.Second)
			o.observe(watch.Modified, object(name, "cccccccc-0000", "36", adopter, nil), adopted)
			if until, n := o.pendingUntil(adopted); n != 1 || until.Before(adopted.Add(4*time.Second)) {
				t.Errorf("adopted: pendingUntil = %v, %d; want b3-r0 due 4s after the adoption at %v, 1", until, n, adopted)
			}
		},
		counts: map[string]int{handOverAdopted: 1},
	}, {
		name: "never adopted",
		history: func(o *oracle) {
			o.declared("b3", 30, name)
			o.adopting("b3", adopter, 30, name)
			o.undeclared("b0", 31, base, name)
			o.finalCheck()
		},
		want: "not adopted: b5-r2 (uid cccccccc, annotations map[controller:bbbbbbbb deletionDelay:1s deletionTimestamp:" + base.Format(time.RFC3339) + " label:bundle:b0]) is not controlled by Bundle b3 (uid dddddddd), which declared it to adopt it at revision 30",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle()
			o.declared("b0", 10, name)
			o.declared("b3", 10, "b3-r0")
			o.observe(watch.Added, handed("11", giver), base.Add(-time.Minute))
			o.observe(watch.Added, object("b3-r0", "eeeeeeee-0000", "12", adopter, map[string]string{limbov1alpha1.AnnotationDeletionDelay: "4s"}), base.Add(-time.Minute))
			o.undeclared("b3", 20, base, "b3-r0")
			tt.history(o)
			wantViolation(t, o.violations, tt.want)
			if tt.after != nil {
				tt.after(t, o)
			}
			for variant, n := range tt.counts {
				if o.stats.handOvers[variant] != n {
					t.Errorf("hand-overs %s: %d, want %d", variant, o.stats.handOvers[variant], n)
				}
			}
		})
	}
}

// Sharded (oracle.sharded): a controller outage of a shard (outage.shard)
// excuses lateness only for the objects acted on by that shard — of a
// Bundle in it at the time (by its shard log, moves included), or released
// with its label — and a restart there ends a kube-apiserver outage early for
// those alone. A move is no outage: a Bundle moved out of the shard that is
// down is due from the move on.
func TestOracleShards(t *testing.T) {
	base := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	bundleUID := types.UID("bbbbbbbb-0000")
	yes := true
	object := func(rv string, controlled bool, shard string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: rv,
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1s", limbov1alpha1.AnnotationDeletionTimestamp: base.Format(time.RFC3339)},
			Labels:      map[string]string{limbov1alpha1.LabelBundle: "b0"}}
		if shard == shardA {
			m.Labels[shardLabel] = shardA
		}
		if controlled {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: bundleUID, Controller: &yes}}
		}
		return m
	}
	// The deadline is base+1s; the rest's controller is down from base to
	// base+10s.
	restDown := outage{what: outageController, shard: shardRest, start: base, end: base.Add(10 * time.Second)}
	aDown := outage{what: outageController, shard: shardA, start: base, end: base.Add(10 * time.Second)}
	tests := []struct {
		name string
		// moves are the Bundle's shards after the first, at base + each key.
		shard     string
		moves     map[time.Duration]string
		outages   []outage
		final     metav1.ObjectMeta
		deletedAt time.Duration // after base
		// releasedAt, when set, is when the watch saw the object released
		// (final without its deletion), after base.
		releasedAt time.Duration
		// generates: the Bundle of the object's name declares a generator
		// resource; generatorDeleted, when set, is when that Bundle was
		// deleted, after base.
		generates        bool
		generatorDeleted time.Duration
		want             string
	}{{
		name: "in the shard that was down: excused", shard: shardRest, outages: []outage{restDown},
		final: object("30", true, shardRest), deletedAt: 11 * time.Second,
	}, {
		name: "in the other shard: late", shard: shardA, outages: []outage{restDown},
		final: object("30", true, shardA), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		name: "shard a down, in shard a: excused", shard: shardA, outages: []outage{aDown},
		final: object("30", true, shardA), deletedAt: 11 * time.Second,
	}, {
		name: "shard a down, in the rest: late", shard: shardRest, outages: []outage{aDown},
		final: object("30", true, shardRest), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		name: "both down, shard a longer, in the rest: excused until the rest is back only", shard: shardRest,
		outages: []outage{{what: outageController, shard: shardRest, start: base, end: base.Add(4 * time.Second)}, aDown},
		final:   object("30", true, shardRest), deletedAt: 7 * time.Second, want: "more than 2s late",
	}, {
		name: "moved from the rest into shard a while a is down: excused until a is back", shard: shardRest, moves: map[time.Duration]string{500 * time.Millisecond: shardA},
		outages: []outage{aDown}, final: object("30", true, shardRest), deletedAt: 11 * time.Second,
	}, {
		name: "in the other shard, the object still labelled with the one down: late", shard: shardA, outages: []outage{restDown},
		final: object("30", true, shardRest), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		name: "moved out of the shard down: due from the move, in time", shard: shardRest, moves: map[time.Duration]string{5 * time.Second: shardA},
		outages: []outage{restDown}, final: object("30", true, shardRest), deletedAt: 6 * time.Second,
	}, {
		name: "moved out of the shard down: due from the move, late", shard: shardRest, moves: map[time.Duration]string{5 * time.Second: shardA},
		outages: []outage{restDown}, final: object("30", true, shardRest), deletedAt: 9 * time.Second, want: "more than 2s late",
	}, {
		name: "moved into the shard down: excused until it is back", shard: shardA, moves: map[time.Duration]string{500 * time.Millisecond: shardRest},
		outages: []outage{restDown}, final: object("30", true, shardA), deletedAt: 11 * time.Second,
	}, {
		name: "moved into the shard down after the deadline plus tolerance: late", shard: shardA, moves: map[time.Duration]string{5 * time.Second: shardRest},
		outages: []outage{restDown}, final: object("30", true, shardA), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		name: "released with the label of the shard down: the reaper's, excused", shard: shardA, outages: []outage{restDown},
		final: object("30", false, shardRest), deletedAt: 11 * time.Second,
	}, {
		name: "released with the other shard's label: late", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		// Seed 450555276: the reaper holds a released object while the Bundle
		// of its name has a generator and has not passed its current spec
		// (it may make the object again), and that Bundle's shard was down.
		name: "released with the other shard's label, its Bundle's generator in the shard down: excused", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 11 * time.Second, generates: true,
	}, {
		// The reaper reads that Bundle every second: a second more.
		name: "released, its Bundle's generator in the shard down: excused until a second past the tolerance", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 12500 * time.Millisecond, generates: true,
	}, {
		name: "released, its Bundle's generator in the shard down: late past that second", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 13500 * time.Millisecond, generates: true, want: "more than 3s late",
	}, {
		// Seeds 176699246 and 580248476: that Bundle deleted once its shard
		// was back ended the hold; the reaper's next look deleted the object.
		name: "released, its Bundle's generator in the shard down, deleted after: excused until a second past the tolerance", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 12500 * time.Millisecond, generates: true, generatorDeleted: 10200 * time.Millisecond,
	}, {
		name: "released, its Bundle's generator in the shard down, deleted after: late past that second", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 13500 * time.Millisecond, generates: true, generatorDeleted: 10200 * time.Millisecond, want: "more than 3s late",
	}, {
		// Deleted during the outage: the hold ended then, the rest of the
		// outage is no excuse.
		name: "released, its Bundle's generator deleted while its shard was down: due a second past the tolerance after", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 6500 * time.Millisecond, generates: true, generatorDeleted: 4 * time.Second,
	}, {
		name: "released, its Bundle's generator deleted while its shard was down: late past that", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 7500 * time.Millisecond, generates: true, generatorDeleted: 4 * time.Second, want: "more than 3s late",
	}, {
		name: "released, its Bundle's generator deleted before the deadline: late", shard: shardRest, outages: []outage{restDown},
		final: object("30", false, shardA), deletedAt: 11 * time.Second, generates: true, generatorDeleted: 500 * time.Millisecond, want: "more than 2s late",
	}, {
		// Seed 241325230: a Bundle moved to the rest while its object, still
		// labelled with shard a, counted down; the rest was down over the
		// deadline, the Bundle deleted meanwhile, and the rest's teardown
		// released the object to shard a's reaper once it was back.
		name: "released with the other shard's label by the shard down once back: excused until the release", shard: shardRest, outages: []outage{restDown},
		releasedAt: 10500 * time.Millisecond, final: object("30", false, shardA), deletedAt: 11 * time.Second,
	}, {
		name: "released with the other shard's label by the shard down once back: late after the release", shard: shardRest, outages: []outage{restDown},
		releasedAt: 10500 * time.Millisecond, final: object("30", false, shardA), deletedAt: 14 * time.Second, want: "more than 2s late",
	}, {
		name: "released with the other shard's label before the outage: late", shard: shardRest, outages: []outage{restDown},
		releasedAt: -500 * time.Millisecond, final: object("30", false, shardA), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		// kube-apiserver away from base to base+4s: back for sure at base+8s;
		// the rest's leader started afresh at base+5s ends that early for the
		// rest only.
		name: "an API outage ended early by a restart of the other shard: excused", shard: shardA,
		outages: []outage{{what: outageAPIServer, start: base, end: base.Add(4 * time.Second)}, {what: outageController, shard: shardRest, start: base.Add(4500 * time.Millisecond), end: base.Add(5 * time.Second)}},
		final:   object("30", true, shardA), deletedAt: 9 * time.Second,
	}, {
		name: "an API outage ended early by a restart of its shard: late", shard: shardRest,
		outages: []outage{{what: outageAPIServer, start: base, end: base.Add(4 * time.Second)}, {what: outageController, shard: shardRest, start: base.Add(4500 * time.Millisecond), end: base.Add(5 * time.Second)}},
		final:   object("30", true, shardRest), deletedAt: 9 * time.Second, want: "more than 2s late",
	}, {
		name: "an API outage ended early by a restart of shard a: late for shard a", shard: shardA,
		outages: []outage{{what: outageAPIServer, start: base, end: base.Add(4 * time.Second)}, {what: outageController, shard: shardA, start: base.Add(4500 * time.Millisecond), end: base.Add(5 * time.Second)}},
		final:   object("30", true, shardA), deletedAt: 9 * time.Second, want: "more than 2s late",
	}, {
		// Seed 995699865: the Bundle was in shard a when shard a restarted
		// afresh, then moved to the rest, whose controller ran through the API
		// outage and still backs off: from the move on, the rest's end holds.
		name: "an API outage ended early by a restart of shard a, then moved to the rest: excused", shard: shardA, moves: map[time.Duration]string{5500 * time.Millisecond: shardRest},
		outages: []outage{{what: outageAPIServer, start: base, end: base.Add(4 * time.Second)}, {what: outageController, shard: shardA, start: base.Add(4500 * time.Millisecond), end: base.Add(5 * time.Second)}},
		final:   object("30", true, shardA), deletedAt: 7500 * time.Millisecond,
	}, {
		name: "an API outage ended early by a restart of shard a, then moved to the rest: late after the rest's end", shard: shardA, moves: map[time.Duration]string{5500 * time.Millisecond: shardRest},
		outages: []outage{{what: outageAPIServer, start: base, end: base.Add(4 * time.Second)}, {what: outageController, shard: shardA, start: base.Add(4500 * time.Millisecond), end: base.Add(5 * time.Second)}},
		final:   object("30", true, shardA), deletedAt: 11 * time.Second, want: "more than 2s late",
	}, {
		name: "an API outage ended early by a restart of shard a: excused for the rest", shard: shardRest,
		outages: []outage{{what: outageAPIServer, start: base, end: base.Add(4 * time.Second)}, {what: outageController, shard: shardA, start: base.Add(4500 * time.Millisecond), end: base.Add(5 * time.Second)}},
		final:   object("30", true, shardRest), deletedAt: 9 * time.Second,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle()
			o.sharded = true
			o.inShard("b0", bundleUID, tt.shard, base.Add(-time.Hour))
			for _, d := range slices.Sorted(maps.Keys(tt.moves)) {
				o.inShard("b0", bundleUID, tt.moves[d], base.Add(d))
			}
			o.declared("b0", 10, "b0-r0")
			o.declaresGenerators("b0", bundleUID, tt.generates, base.Add(-time.Hour))
			if tt.generatorDeleted != 0 {
				o.declaresGenerators("b0", bundleUID, false, base.Add(tt.generatorDeleted))
			}
			created := object("11", true, tt.shard)
			o.observe(watch.Added, created, base.Add(-time.Minute))
			o.undeclared("b0", 20, base.Add(-time.Second), "b0-r0")
			o.outages = tt.outages
			if tt.releasedAt != 0 {
				released := *tt.final.DeepCopy()
				released.ResourceVersion = "25"
				o.observe(watch.Modified, released, base.Add(tt.releasedAt))
			}
			o.observe(watch.Deleted, tt.final, base.Add(tt.deletedAt))
			wantViolation(t, o.violations, tt.want)
		})
	}

	// Not deleted at all: checkOverdue reports it once the shard that acts on
	// it had the time to, not while the shard it is in is down.
	overdue := func(shard string, down bool) []string {
		o := newOracle()
		o.sharded = true
		now := time.Now()
		o.inShard("b0", bundleUID, shard, now.Add(-time.Hour))
		o.declared("b0", 10, "b0-r0")
		m := object("11", true, shard)
		m.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = now.Add(-10 * time.Second).Format(time.RFC3339)
		o.observe(watch.Added, m, now.Add(-time.Minute))
		o.undeclared("b0", 20, now.Add(-time.Minute), "b0-r0")
		if down {
			o.outageStartedAt(outageController, shardRest, now.Add(-10*time.Second)) // and lasts
		}
		o.checkOverdue(now)
		return o.violations
	}
	if v := overdue(shardRest, true); len(v) != 0 {
		t.Errorf("an object of the shard down: violations %q, want none", v)
	}
	if v := overdue(shardA, true); len(v) != 1 || !strings.Contains(v[0], "still exists") {
		t.Errorf("an object of the other shard: violations %q, want one saying it still exists", v)
	}
}

// Sharded, a hand-over across shards: a release to the adopter writes the
// adopter's shard label, and wakes it as within one shard; an object the giver
// still controls past its deadline (not handed over) is late as within one
// shard. Only an object released with another shard's label than the
// adopter's — its lookup of the adopter failed — waits for the adopter's
// recheck of the objects in its way (inTheWayRecheck): its cache does not
// select it, so the release does not wake the adopter.
func TestOracleShardsAdoption(t *testing.T) {
	giver, adopter := types.UID("bbbbbbbb-0000"), types.UID("dddddddd-0000")
	yes := true
	run := func(objectShard string, late time.Duration, release bool) []string {
		now := time.Now()
		o := newOracle()
		o.sharded = true
		o.inShard("b0", giver, objectShard, now.Add(-time.Hour))
		o.inShard("b3", adopter, shardRest, now.Add(-time.Hour))
		m := metav1.ObjectMeta{Name: "b0-r0", UID: "cccccccc-0000", ResourceVersion: "11",
			Labels:          map[string]string{limbov1alpha1.LabelBundle: "b0"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b0", UID: giver, Controller: &yes}}}
		if objectShard == shardA {
			m.Labels[shardLabel] = shardA
		}
		o.declared("b0", 10, "b0-r0")
		o.observe(watch.Added, m, now.Add(-time.Hour))
		o.declared("b3", 20, "b0-r0")
		o.adopting("b3", adopter, 20, "b0-r0")
		o.undeclared("b0", 21, now.Add(-time.Hour), "b0-r0")
		if release {
			released := *m.DeepCopy()
			released.ResourceVersion, released.OwnerReferences = "22", nil
			o.observe(watch.Modified, released, now)
		}
		o.checkOverdue(now.Add(late))
		return o.violations
	}
	if v := run(shardA, adoptionTolerance+time.Second, true); len(v) != 0 {
		t.Errorf("released with the giver's label, before the recheck: violations %q, want none", v)
	}
	if v := run(shardA, inTheWayRecheck+adoptionTolerance+time.Second, true); len(v) != 1 || !strings.Contains(v[0], "not adopted in time") {
		t.Errorf("released with the giver's label, after the recheck: violations %q, want one saying not adopted in time", v)
	}
	if v := run(shardRest, adoptionTolerance+time.Second, true); len(v) != 1 || !strings.Contains(v[0], "not adopted in time") {
		t.Errorf("released with the adopter's label: violations %q, want one saying not adopted in time", v)
	}
	if v := run(shardA, adoptionTolerance+time.Second, false); len(v) != 1 || !strings.Contains(v[0], "not adopted in time") {
		t.Errorf("never handed over by a giver of another shard: violations %q, want one saying not adopted in time", v)
	}
}

// wantViolation checks violations: none when want is empty, else one that
// says want.
func wantViolation(t *testing.T, violations []string, want string) {
	t.Helper()
	got := strings.Join(violations, "\n")
	if want == "" && got != "" {
		t.Errorf("violations %q, want none", got)
	}
	if want != "" && !strings.Contains(got, want) {
		t.Errorf("violations %q, want one saying %q", got, want)
	}
}

// markUnready checks its Bundle's orphans, then writes the gate through
// mutate, which waits while a kube-apiserver restart pauses the writes: an
// orphan due within redeclareGuard by the time the write may land must stop
// it, however safe it was at the check (seed 283296643: the check passed
// 2.6 s before b3-r3's deadline, the write landed 16 s after it, and limbo
// deleted b3-r3 on a cache that had not seen the gate not Ready yet). Here
// the orphan becomes due while the write waits by an expedite (its stamp set
// back by its delay), rather than by the time the restart took.
func TestOracleMarkUnreadyAfterPause(t *testing.T) {
	const bundleUID = types.UID("bbbbbbbb-0000")
	o := newOracle()
	// b3-r3, handed over to b2 and dropped by it: b2's orphan, stamped, due in
	// an hour.
	stamp := time.Now().Truncate(time.Second)
	orphan := func(rv string, stamp time.Time) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "b3-r3", UID: "cccccccc-0000", ResourceVersion: rv,
			Labels:          map[string]string{limbov1alpha1.LabelBundle: "b2"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "b2", UID: bundleUID, Controller: ptr.To(true)}},
			Annotations:     map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationDeletionTimestamp: stamp.Format(time.RFC3339)}}
	}
	o.observe(watch.Added, orphan("11", stamp), time.Now())

	var patched atomic.Bool
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("get", "bundles", func(k8stesting.Action) (bool, runtime.Object, error) {
		// The Bundle's status shows the gate as the last status write left it.
		state := limbov1alpha1.ResourceReady
		if patched.Load() {
			state = limbov1alpha1.ResourceInProgress
		}
		return true, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "limbo.dev/v1alpha1", "kind": "Bundle",
			"metadata": map[string]any{"name": "b2", "namespace": "ns", "uid": string(bundleUID), "generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "resources": []any{
				map[string]any{"name": gateResource, "state": string(state)},
			}},
		}}, nil
	})
	dyn.PrependReactor("patch", "widgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		patched.Store(true)
		return true, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.limbo.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "b2-gate", "namespace": "ns", "resourceVersion": "40"},
		}}, nil
	})
	checked := make(chan struct{}, 1)
	g := &generator{oracle: o, namespace: "ns", dynamic: dyn, pause: &sync.RWMutex{},
		awaitingPause: func() { checked <- struct{}{} }}
	s := &slot{name: "b2", uid: bundleUID, gated: true, rng: rand.New(rand.NewPCG(1, 1))}

	// A kube-apiserver restart holds the writes from before the check until
	// the orphan is due.
	g.pause.Lock()
	done := make(chan bool)
	go func() { done <- g.markUnready(context.Background(), s) }()
	<-checked                              // the orphans were checked; the write waits for the pause
	o.touched("cccccccc-0000", time.Now()) // the expedite
	o.observe(watch.Modified, orphan("12", stamp.Add(-time.Hour)), time.Now())
	g.pause.Unlock()
	if ok := <-done; ok || patched.Load() {
		t.Errorf("mark-unready (done: %v) wrote the gate not Ready (%v), b2's orphan b3-r3 due", ok, patched.Load())
	} else if s.gateUnready {
		t.Error("the slot takes the gate for not Ready after a refused write")
	}
	if len(o.violations) > 0 {
		t.Errorf("violations %q", o.violations)
	}
}
