// Package fanout runs independent calls side by side, a bounded number at a
// time: the reads and writes of one pass (a wave's applies, a scan's kinds,
// the rows kubectl limbo reads), each call writing into its own slot of a
// slice that the caller folds in order afterwards, so that the result does not
// depend on which call finished first.
package fanout

import "sync"

// Each calls do(0) … do(n-1), at most limit (below 1 counts as 1) at a time,
// and returns when every call has.
func Each(limit, n int, do func(i int)) {
	slots := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			do(i)
		})
	}
	wg.Wait()
}
