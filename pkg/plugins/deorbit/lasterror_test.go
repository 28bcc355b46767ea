package deorbit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// The last error a pass failed with is kept in the teardown state, which the
// Bundle's annotations hold: bounded, since an endpoint's error may quote its
// whole answer (a state too large to keep fails the teardown's every pass),
// and still evented once.
func TestLastErrorIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := &state{}
	long := errors.New(strings.Repeat("x", 100<<10))
	var events int
	for range 2 {
		r := &pass{req: plugin.Request{Now: now}, cfg: config{timeout: time.Hour}, st: st, res: &plugin.TeardownResult{}, start: now}
		r.failed(long)
		events += len(r.res.Events)
		if r.err == nil {
			t.Fatal("the pass did not fail")
		}
	}
	if n := len(st.LastError); n == 0 || n > maxLastError {
		t.Errorf("the state keeps a last error of %d bytes, want 1 to %d", n, maxLastError)
	}
	if events != 1 {
		t.Errorf("%d events of the same error in two passes, want 1", events)
	}
}

// A give-up past the timeout quotes the last error, bounded too: the whole of a
// long one made a state too large to keep, and every pass gave up again.
func TestGiveUpMessageIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := &state{}
	r := &pass{p: New(Options{}), req: plugin.Request{Now: now}, cfg: config{timeout: time.Hour}, st: st, res: &plugin.TeardownResult{}, start: now.Add(-2 * time.Hour)}
	r.failed(errors.New(strings.Repeat("x", 100<<10)))
	if !r.res.Done {
		t.Fatal("the pass past the timeout did not give up")
	}
	if n := len(st.Finished) + len(st.Warning) + len(r.res.Warning); n > 8<<10 {
		t.Errorf("the give-up keeps %d bytes of messages, want at most 8 KiB", n)
	}
}
