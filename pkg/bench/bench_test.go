package bench

import (
	"testing"
	"time"
)

func TestDelta(t *testing.T) {
	got := Delta(map[string]float64{"a": 1, "b": 2, "gone": 4}, map[string]float64{"a": 1, "b": 5, "new": 1})
	want := map[string]float64{"b": 3, "new": 1, "gone": -4}
	if len(got) != len(want) {
		t.Fatalf("Delta = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Delta[%s] = %v, want %v", k, got[k], v)
		}
	}
}

func TestPercentile(t *testing.T) {
	v := make([]float64, 200)
	for i := range v {
		v[i] = float64(200 - i) // 200..1, unsorted
	}
	s := sortedCopy(v)
	for _, c := range []struct{ q, want float64 }{{0.5, 100}, {0.99, 198}, {1, 200}, {0.001, 1}} {
		if got := percentile(s, c.q); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestWorkloadDeletions(t *testing.T) {
	w := newWorkload(200, 10, 200, 5*time.Second, 20*time.Second)
	if w.deletions() != 200 || len(w.removed) != 200 {
		t.Fatalf("deletions %d over %d Bundles, want 200 over 200", w.deletions(), len(w.removed))
	}
	lo, hi := time.Hour, time.Duration(0)
	for it, d := range w.delays {
		if it.object != 9 {
			t.Errorf("object %v removed, want the last of each Bundle", it)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo != 5*time.Second || hi != 20*time.Second {
		t.Errorf("delays within %v..%v, want 5s..20s", lo, hi)
	}
	// More deletions than Bundles: several objects of a Bundle, from the last.
	w = newWorkload(3, 4, 7, time.Second, time.Second)
	if got := w.removed[0]; len(got) != 3 || got[0] != 3 || got[1] != 2 || got[2] != 1 {
		t.Errorf("Bundle 0 loses %v, want [3 2 1]", got)
	}
	cm := w.configMap(0, 3)
	if cm["metadata"].(map[string]any)["annotations"] == nil {
		t.Error("a removed object carries no deletion delay")
	}
	if _, err := w.bundle("ns", 0, func(j int) bool { return j == 3 }); err != nil {
		t.Fatal(err)
	}
}
