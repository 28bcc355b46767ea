package fanout_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/limbo-dev/limbo/pkg/fanout"
)

// Every call runs once, never more than limit at a time (a limit below 1 is
// 1), and Each returns only once all have.
func TestEach(t *testing.T) {
	for _, tc := range []struct{ limit, n, wantMost int }{
		{limit: 3, n: 20, wantMost: 3},
		{limit: 0, n: 5, wantMost: 1},
		{limit: 8, n: 0, wantMost: 0},
	} {
		var running, most atomic.Int32
		var mu sync.Mutex
		calls := make([]int, tc.n)
		fanout.Each(tc.limit, tc.n, func(i int) {
			now := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			mu.Lock()
			calls[i]++
			mu.Unlock()
		})
		for i, c := range calls {
			if c != 1 {
				t.Errorf("limit %d: do(%d) ran %d times, want once", tc.limit, i, c)
			}
		}
		if int(most.Load()) > tc.wantMost || running.Load() != 0 {
			t.Errorf("limit %d: %d calls at once (want at most %d), %d still running after Each", tc.limit, most.Load(), tc.wantMost, running.Load())
		}
	}
}
