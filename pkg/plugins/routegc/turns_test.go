package routegc

import (
	"context"
	"testing"
	"testing/synctest"
)

// A plan waiting for the resource's turn goes before the removals queued ahead
// of it: behind a batch of removals (each a Nova listing and a router update),
// its 30 s ran out, the resource was in Error, and its Bundle's due
// Tombstones were held, batch after batch.
func TestPlanGoesBeforeQueuedRemovals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newResourceState()
		ctx := context.Background()
		if err := st.acquireRemoval(ctx); err != nil { // a removal running
			t.Fatal(err)
		}
		order := make(chan string, 3)
		for _, name := range []string{"removal-2", "removal-3"} {
			go func() {
				if err := st.acquireRemoval(ctx); err == nil {
					order <- name
					st.release()
				}
			}()
			synctest.Wait() // queued
		}
		go func() {
			if err := st.acquirePlan(ctx); err == nil {
				order <- "plan"
				st.release()
			}
		}()
		synctest.Wait()
		st.release() // the running removal ends
		if first := <-order; first != "plan" {
			t.Errorf("%s had the turn first, want the plan", first)
		}
		<-order
		<-order
	})
}
