package routegc

import (
	"math"
	"testing"
	"time"
)

// jitter adds 0 to 50 % of the interval, saturating at the longest duration:
// the schema's longest interval (2562047h) overflowed into a negative wait,
// which polled at once. parse bounds the interval far below that; jitter does
// not rely on it.
func TestJitterBy(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name     string
		interval time.Duration
		f        float64
		want     time.Duration
	}{
		{"no jitter", 5 * time.Minute, 0, 5 * time.Minute},
		{"half of the most", 5 * time.Minute, 0.5, 5*time.Minute + 75*time.Second},
		{"nearly the most", 10 * time.Second, 0.999999, 10*time.Second + 4999995*time.Microsecond},
		{"the longest interval the spec admits", MaxInterval, 0.999999, MaxInterval + time.Duration(0.999999*0.5*float64(MaxInterval))},
		{"the schema's longest duration", 2562047 * time.Hour, 0.5, longest},
		{"the schema's longest duration, no jitter", 2562047 * time.Hour, 0, 2562047 * time.Hour},
		{"the longest duration", longest, 0.999999, longest},
		{"just past the longest", longest - time.Hour, 0.001, longest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jitterBy(tc.interval, tc.f); got != tc.want {
				t.Errorf("jitterBy(%v, %v) = %v, want %v", tc.interval, tc.f, got, tc.want)
			}
		})
	}
	for range 1000 {
		if got := jitter(2562047 * time.Hour); got < 2562047*time.Hour {
			t.Fatalf("jitter(2562047h) = %v: below the interval", got)
		}
	}
}
