package refusedlogin_test

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/limbo-dev/limbo/pkg/refusedlogin"
)

// A refused login is the answer to the logins of the next Retry,
// and no longer after it; nothing is remembered before a refusal.
func TestMemory(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	r := refusedlogin.Memory{Now: clk.Now}
	if err := r.Recent(); err != nil {
		t.Fatalf("before any refusal: %v", err)
	}
	refusal := errors.New("401")
	r.Remember(refusal)
	for _, tc := range []struct {
		after time.Duration // since the refusal
		want  error
	}{
		{0, refusal},
		{refusedlogin.Retry - time.Nanosecond, refusal},
		{refusedlogin.Retry, nil},
	} {
		clk.SetTime(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC).Add(tc.after))
		if err := r.Recent(); !errors.Is(err, tc.want) { // errors.Is(err, nil): err is nil
			t.Errorf("%v after the refusal: %v, want %v", tc.after, err, tc.want)
		}
	}
}
