package bundle

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A fight is driftRepeats corrections within driftWindow, told once per window.
func TestDriftWatchCorrected(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	type step struct {
		after time.Duration // since t0
		n     int
		warn  bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the third correction within the window warns, the next ones do not", []step{
			{0, 1, false}, {time.Minute, 2, false}, {2 * time.Minute, 3, true}, {3 * time.Minute, 4, false}, {9 * time.Minute, 5, false}}},
		{"corrections a window apart are no fight", []step{
			{0, 1, false}, {6 * time.Minute, 2, false}, {12 * time.Minute, 2, false}, {18 * time.Minute, 2, false}}},
		{"a fight that goes on is told again a window after", []step{
			{0, 1, false}, {time.Minute, 2, false}, {2 * time.Minute, 3, true},
			{8 * time.Minute, 4, false}, {11 * time.Minute, 3, false}, {12 * time.Minute, 3, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w driftWatch
			for i, s := range tc.steps {
				// due foretells the warning without counting: asked twice, it
				// answers the same.
				for range 2 {
					if due := w.due("uid-1", t0.Add(s.after)); due != s.warn {
						t.Errorf("step %d (+%s): due = %v, want %v", i, s.after, due, s.warn)
					}
				}
				n, warn := w.corrected("uid-1", t0.Add(s.after))
				if n != s.n || warn != s.warn {
					t.Errorf("step %d (+%s): n, warn = %d, %v; want %d, %v", i, s.after, n, warn, s.n, s.warn)
				}
			}
		})
	}
}

// Objects are counted apart, and a forgotten one starts again.
func TestDriftWatchPerObject(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var w driftWatch
	w.corrected("a", t0)
	w.corrected("a", t0.Add(time.Second))
	if n, _ := w.corrected("b", t0.Add(2*time.Second)); n != 1 {
		t.Errorf("b's first correction counted %d", n)
	}
	w.forget("a")
	if n, warn := w.corrected("a", t0.Add(3*time.Second)); n != 1 || warn {
		t.Errorf("a after forget: n, warn = %d, %v; want 1, false", n, warn)
	}
}

// The objects followed are bounded: stale records go first, then any.
func TestDriftWatchBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var w driftWatch
	for i := range driftWatchMax {
		w.corrected(types.UID(fmt.Sprint("old-", i)), t0)
	}
	w.corrected("recent", t0.Add(driftWindow-time.Second))
	if len(w.m) != driftWatchMax {
		t.Fatalf("%d records, want %d", len(w.m), driftWatchMax)
	}
	later := t0.Add(driftWindow + time.Second)
	w.corrected("new", later)
	if len(w.m) != 2 {
		t.Errorf("%d records after a stale sweep, want 2 (recent, new)", len(w.m))
	}
	for i := range driftWatchMax {
		w.corrected(types.UID(fmt.Sprint("fresh-", i)), later)
	}
	if len(w.m) > driftWatchMax {
		t.Errorf("%d records, want at most %d", len(w.m), driftWatchMax)
	}
}
