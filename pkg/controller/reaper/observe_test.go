package reaper

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An event of an object in limbo that no Bundle controls pokes the reaper (an
// expedite is honoured at once, not at the soonest deadline) and makes its
// kind one that passes between full scans list; an event of any other object
// does neither: it is no business of the reaper's, and a poke for each would
// run a pass of every kind in limbo per event.
func TestObserve(t *testing.T) {
	for _, tc := range []struct {
		name       string
		controlled bool
		wantPoked  bool
		wantKinds  string
	}{
		{name: "released", wantPoked: true, wantKinds: "[/v1, Kind=ConfigMap]"},
		{name: "controlled by its Bundle", controlled: true, wantPoked: false, wantKinds: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newReaper(t)
			obj := inLimbo("obj", "2026-11-22T09:00:00Z", "1h", tc.controlled)
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			r.Observe(obj)
			r.Observe(obj) // a second event while a pass is due: one poke is enough
			if poked := len(r.poke) == 1; poked != tc.wantPoked {
				t.Errorf("poked = %v, want %v", poked, tc.wantPoked)
			}
			if kinds, _ := r.kindsToScan(false); fmt.Sprint(kinds) != tc.wantKinds {
				t.Errorf("kinds listed between full scans = %v, want %s", kinds, tc.wantKinds)
			}
		})
	}
}

// A kind in limbo whose objects cannot be watched (OnKind failed) is still
// reaped, and the pass reports the failure: without the watch, an expedite of
// its objects waits for the next pass.
func TestOnKindFailure(t *testing.T) {
	failing := errors.New("injected: no informer")
	r, c := newReaper(t, inLimbo("due", "2026-11-22T08:00:00Z", "1h", false))
	r.OnKind = func(schema.GroupVersionKind) error { return failing }
	if _, err := r.pass(context.Background(), true); !errors.Is(err, failing) {
		t.Errorf("pass: %v, want the failed watch", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "due"}, &corev1.ConfigMap{}); err == nil {
		t.Error("due: kept, want it deleted at its deadline")
	}
}
