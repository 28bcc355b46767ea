package bundle

import (
	"testing"
	"time"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A plugin resource's next pass for its poll: the plan's PollAfter, else the
// plugin's default, never sooner than minPluginPoll (a tiny poll ran a pass, a
// Plan and its backend calls about every millisecond); none without either.
func TestPollAfter(t *testing.T) {
	if minPluginPoll != time.Second {
		t.Errorf("minPluginPoll = %v, want 1s", minPluginPoll)
	}
	for _, tc := range []struct {
		name   string
		def    time.Duration
		result *plugin.Result
		want   time.Duration
	}{
		{"the plan's poll", time.Minute, &plugin.Result{PollAfter: 5 * time.Minute}, 5 * time.Minute},
		{"the default", time.Minute, &plugin.Result{}, time.Minute},
		{"the default, no result (a failed plan)", time.Minute, nil, time.Minute},
		{"a negative poll is the default", time.Minute, &plugin.Result{PollAfter: -time.Hour}, time.Minute},
		{"none: events only", 0, &plugin.Result{}, 0},
		{"a 1ns poll", time.Minute, &plugin.Result{PollAfter: time.Nanosecond}, time.Second},
		{"a poll just short of the floor", 0, &plugin.Result{PollAfter: time.Second - 1}, time.Second},
		{"the floor", 0, &plugin.Result{PollAfter: time.Second}, time.Second},
		{"a 1ms default", time.Millisecond, nil, time.Second},
		{"the longest poll", 0, &plugin.Result{PollAfter: 1<<63 - 1}, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pollAfter(plugin.Description{DefaultPollInterval: tc.def}, tc.result); got != tc.want {
				t.Errorf("pollAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
