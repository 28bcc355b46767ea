package softdelete_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kube-openapi/pkg/validation/strfmt"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

const (
	delayKey = limbov1alpha1.AnnotationDeletionDelay
	stampKey = limbov1alpha1.AnnotationDeletionTimestamp
)

// now is the fixed time of every test; it has a fraction of a second so that
// stamp truncation shows.
var now = time.Date(2025, time.March, 14, 12, 30, 45, 250_000_000, time.UTC)

// nowSecond is now truncated to the second: what a new stamp records.
var nowSecond = time.Date(2025, time.March, 14, 12, 30, 45, 0, time.UTC)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func annotations(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name  string
		now   time.Time
		state softdelete.State
		want  softdelete.Decision
		// wantErr is the exact text of Decision.Err; "" means nil.
		wantErr string
	}{
		// Desired items.
		{
			name:  "desired, not in limbo",
			state: softdelete.State{Desired: true},
			want:  softdelete.Decision{Action: softdelete.ActionNone},
		},
		{
			name:  "desired with a delay but no stamp",
			state: softdelete.State{Desired: true, Annotations: annotations(delayKey, "1h")},
			want:  softdelete.Decision{Action: softdelete.ActionNone},
		},
		{
			name: "desired again with stamp and label",
			state: softdelete.State{Desired: true, PendingLabel: true,
				Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionCancel},
		},
		{
			name: "desired again with stamp, no label",
			state: softdelete.State{Desired: true,
				Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionCancel},
		},
		{
			name:  "desired again with label only",
			state: softdelete.State{Desired: true, PendingLabel: true, Annotations: annotations(delayKey, "1h")},
			want:  softdelete.Decision{Action: softdelete.ActionCancel},
		},
		{
			name: "desired again, past its deadline",
			state: softdelete.State{Desired: true, PendingLabel: true,
				Annotations: annotations(delayKey, "1m", stampKey, "2020-01-01T00:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionCancel},
		},
		{
			name: "desired again with unparsable stamp",
			state: softdelete.State{Desired: true,
				Annotations: annotations(delayKey, "1h", stampKey, "yesterday")},
			want: softdelete.Decision{Action: softdelete.ActionCancel},
		},
		{
			name:  "desired with invalid delay, not in limbo",
			state: softdelete.State{Desired: true, Annotations: annotations(delayKey, "abc")},
			want:  softdelete.Decision{Action: softdelete.ActionNone},
		},
		{
			name: "desired again with invalid delay",
			state: softdelete.State{Desired: true, PendingLabel: true,
				Annotations: annotations(delayKey, "-5m", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionCancel},
		},

		// Orphans without a delay.
		{
			name:  "orphan, nil annotations",
			state: softdelete.State{},
			want:  softdelete.Decision{Action: softdelete.ActionDelete},
		},
		{
			name:  "orphan, other annotations only",
			state: softdelete.State{Annotations: annotations("example.com/x", "y")},
			want:  softdelete.Decision{Action: softdelete.ActionDelete},
		},
		{
			name:  "orphan without delay but with a stale stamp and label",
			state: softdelete.State{PendingLabel: true, Annotations: annotations(stampKey, "2099-01-01T00:00:00Z")},
			want:  softdelete.Decision{Action: softdelete.ActionDelete},
		},

		// Orphans with an invalid delay: never deleted.
		{
			name:    "unparsable delay",
			state:   softdelete.State{Annotations: annotations(delayKey, "abc")},
			want:    softdelete.Decision{Action: softdelete.ActionInvalid},
			wantErr: `invalid limbo.dev/deletionDelay "abc": not a duration (Go syntax: 10m, 24h, 1h30m)`,
		},
		{
			name:    "negative delay",
			state:   softdelete.State{Annotations: annotations(delayKey, "-5m")},
			want:    softdelete.Decision{Action: softdelete.ActionInvalid},
			wantErr: `invalid limbo.dev/deletionDelay "-5m": must not be negative`,
		},
		{
			name:    "empty delay",
			state:   softdelete.State{Annotations: annotations(delayKey, "")},
			want:    softdelete.Decision{Action: softdelete.ActionInvalid},
			wantErr: `invalid limbo.dev/deletionDelay "": not a duration (Go syntax: 10m, 24h, 1h30m)`,
		},
		{
			name:    "delay without unit",
			state:   softdelete.State{Annotations: annotations(delayKey, "300")},
			want:    softdelete.Decision{Action: softdelete.ActionInvalid},
			wantErr: `invalid limbo.dev/deletionDelay "300": not a duration (Go syntax: 10m, 24h, 1h30m)`,
		},
		{
			name:    "invalid delay, stamped long ago",
			state:   softdelete.State{PendingLabel: true, Annotations: annotations(delayKey, "abc", stampKey, "2020-01-01T00:00:00Z")},
			want:    softdelete.Decision{Action: softdelete.ActionInvalid},
			wantErr: `invalid limbo.dev/deletionDelay "abc": not a duration (Go syntax: 10m, 24h, 1h30m)`,
		},
		{
			name:    "negative delay, stamped long ago",
			state:   softdelete.State{Annotations: annotations(delayKey, "-1s", stampKey, "2020-01-01T00:00:00Z")},
			want:    softdelete.Decision{Action: softdelete.ActionInvalid},
			wantErr: `invalid limbo.dev/deletionDelay "-1s": must not be negative`,
		},

		// Orphans with a valid delay and no stamp: Stamp, truncated to the second.
		{
			name:  "stamp",
			state: softdelete.State{Annotations: annotations(delayKey, "1h")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Delay: time.Hour, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Hour), RequeueAfter: time.Hour - 250*time.Millisecond},
		},
		{
			name:  "stamp, label already set",
			state: softdelete.State{PendingLabel: true, Annotations: annotations(delayKey, "90s")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Delay: 90 * time.Second, Stamp: nowSecond,
				Deadline: nowSecond.Add(90 * time.Second), RequeueAfter: 90*time.Second - 250*time.Millisecond},
		},
		{
			name:  "stamp, now on a whole second",
			now:   nowSecond,
			state: softdelete.State{Annotations: annotations(delayKey, "10m")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Delay: 10 * time.Minute, Stamp: nowSecond,
				Deadline: nowSecond.Add(10 * time.Minute), RequeueAfter: 10 * time.Minute},
		},
		{
			name:  "stamp, now in another time zone",
			now:   now.In(time.FixedZone("CET", 3600)),
			state: softdelete.State{Annotations: annotations(delayKey, "1h")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Delay: time.Hour, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Hour), RequeueAfter: time.Hour - 250*time.Millisecond},
		},
		{
			name:  "zero delay still stamps, requeue at once",
			state: softdelete.State{Annotations: annotations(delayKey, "0s")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Stamp: nowSecond,
				Deadline: nowSecond, RequeueAfter: 0},
		},
		{
			name:  "bare zero delay",
			state: softdelete.State{Annotations: annotations(delayKey, "0")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Stamp: nowSecond,
				Deadline: nowSecond, RequeueAfter: 0},
		},
		{
			// The first stamp, as a restamp (below): by a clock behind the API
			// server's, a stamp at now would end before the creation, and the
			// next pass would restart the countdown as a copy's.
			name:  "stamp by a clock behind the API server's: from its creation",
			now:   at("2025-03-14T11:55:00.5Z"),
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"), Annotations: annotations(delayKey, "1m")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Delay: time.Minute, Stamp: at("2025-03-14T12:00:00Z"),
				Deadline: at("2025-03-14T12:01:00Z"), RequeueAfter: 6*time.Minute - 500*time.Millisecond},
		},
		{
			name:  "sub-second delay already due after truncation",
			state: softdelete.State{Annotations: annotations(delayKey, "100ms")},
			want: softdelete.Decision{Action: softdelete.ActionStamp, Delay: 100 * time.Millisecond, Stamp: nowSecond,
				Deadline: nowSecond.Add(100 * time.Millisecond), RequeueAfter: 0},
		},

		// Orphans with a stamp: Wait or Delete.
		{
			name:  "wait",
			state: softdelete.State{PendingLabel: true, Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Delay: time.Hour, Stamp: at("2025-03-14T12:00:00Z"),
				Deadline: at("2025-03-14T13:00:00Z"), RequeueAfter: 29*time.Minute + 14*time.Second + 750*time.Millisecond},
		},
		{
			name:  "wait, 1ns before the deadline",
			now:   at("2025-03-14T12:59:59.999999999Z"),
			state: softdelete.State{Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Delay: time.Hour, Stamp: at("2025-03-14T12:00:00Z"),
				Deadline: at("2025-03-14T13:00:00Z"), RequeueAfter: time.Nanosecond},
		},
		{
			name:  "delete exactly at the deadline",
			now:   at("2025-03-14T13:00:00Z"),
			state: softdelete.State{Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionDelete, Delay: time.Hour, Stamp: at("2025-03-14T12:00:00Z"),
				Deadline: at("2025-03-14T13:00:00Z")},
		},
		{
			name:  "delete after the deadline",
			state: softdelete.State{PendingLabel: true, Annotations: annotations(delayKey, "1m", stampKey, "2025-03-14T12:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionDelete, Delay: time.Minute, Stamp: at("2025-03-14T12:00:00Z"),
				Deadline: at("2025-03-14T12:01:00Z")},
		},
		{
			name:  "zero delay, stamped: delete on the next pass",
			state: softdelete.State{Annotations: annotations(delayKey, "0s", stampKey, formatNow())},
			want:  softdelete.Decision{Action: softdelete.ActionDelete, Stamp: nowSecond, Deadline: nowSecond},
		},
		{
			name:  "fractional-second stamp, wait",
			now:   at("2025-03-14T12:01:00Z"),
			state: softdelete.State{Annotations: annotations(delayKey, "1m", stampKey, "2025-03-14T12:00:00.5Z")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Delay: time.Minute, Stamp: at("2025-03-14T12:00:00.5Z"),
				Deadline: at("2025-03-14T12:01:00.5Z"), RequeueAfter: 500 * time.Millisecond},
		},
		{
			name:  "fractional-second stamp, delete at its deadline",
			now:   at("2025-03-14T12:01:00.5Z"),
			state: softdelete.State{Annotations: annotations(delayKey, "1m", stampKey, "2025-03-14T12:00:00.5Z")},
			want: softdelete.Decision{Action: softdelete.ActionDelete, Delay: time.Minute, Stamp: at("2025-03-14T12:00:00.5Z"),
				Deadline: at("2025-03-14T12:01:00.5Z")},
		},
		{
			name:  "stamp with a zone offset is read as UTC",
			now:   at("2025-03-14T11:30:00Z"),
			state: softdelete.State{Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T12:00:00+01:00")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Delay: time.Hour, Stamp: at("2025-03-14T11:00:00Z"),
				Deadline: at("2025-03-14T12:00:00Z"), RequeueAfter: 30 * time.Minute},
		},
		{
			name:  "future stamp: wait until stamp + delay",
			state: softdelete.State{Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T13:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Delay: time.Hour, Stamp: at("2025-03-14T13:00:00Z"),
				Deadline: at("2025-03-14T14:00:00Z"), RequeueAfter: time.Hour + 29*time.Minute + 14*time.Second + 750*time.Millisecond},
		},
		{
			name:  "future stamp, zero delay: wait until the stamp",
			state: softdelete.State{Annotations: annotations(delayKey, "0s", stampKey, "2025-03-14T12:31:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Stamp: at("2025-03-14T12:31:00Z"),
				Deadline: at("2025-03-14T12:31:00Z"), RequeueAfter: 14*time.Second + 750*time.Millisecond},
		},
		{
			// Written by hand: stamp + delay falls past year 9999, which no status
			// field can hold.
			name:  "stamp at the end of year 9999: the deadline is clamped to it",
			state: softdelete.State{Annotations: annotations(delayKey, "24h", stampKey, "9999-12-31T23:59:59Z")},
			want: softdelete.Decision{Action: softdelete.ActionWait, Delay: 24 * time.Hour, Stamp: at("9999-12-31T23:59:59Z"),
				Deadline: at("9999-12-31T23:59:59Z"), RequeueAfter: at("9999-12-31T23:59:59Z").Sub(now)},
		},

		// Orphans with an unparsable stamp: Restamp, with a warning.
		{
			name:  "unparsable stamp",
			state: softdelete.State{PendingLabel: true, Annotations: annotations(delayKey, "1h", stampKey, "yesterday")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Delay: time.Hour, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Hour), RequeueAfter: time.Hour - 250*time.Millisecond},
			wantErr: `invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts`,
		},
		{
			name:  "empty stamp",
			state: softdelete.State{Annotations: annotations(delayKey, "1h", stampKey, "")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Delay: time.Hour, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Hour), RequeueAfter: time.Hour - 250*time.Millisecond},
			wantErr: `invalid limbo.dev/deletionTimestamp "": not an RFC 3339 time; the countdown restarts`,
		},
		{
			name:  "stamp without a zone",
			state: softdelete.State{Annotations: annotations(delayKey, "1m", stampKey, "2020-01-01T00:00:00")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Delay: time.Minute, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Minute), RequeueAfter: time.Minute - 250*time.Millisecond},
			wantErr: `invalid limbo.dev/deletionTimestamp "2020-01-01T00:00:00": not an RFC 3339 time; the countdown restarts`,
		},
		{
			name:  "unix-seconds stamp",
			state: softdelete.State{Annotations: annotations(delayKey, "1m", stampKey, "1577836800")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Delay: time.Minute, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Minute), RequeueAfter: time.Minute - 250*time.Millisecond},
			wantErr: `invalid limbo.dev/deletionTimestamp "1577836800": not an RFC 3339 time; the countdown restarts`,
		},
		// A copy of an object in limbo (restored from a backup, re-created from
		// its manifest, kubectl replace --force) carries its original's stamp;
		// a countdown that ended before the copy was created is not its own.
		{
			name: "copy made after its original's deadline: the countdown restarts",
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T10:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Delay: time.Hour, Stamp: nowSecond,
				Deadline: nowSecond.Add(time.Hour), RequeueAfter: time.Hour - 250*time.Millisecond},
			wantErr: `limbo.dev/deletionTimestamp "2025-03-14T10:00:00Z": its countdown ended at 2025-03-14T11:00:00Z, before this object was created at 2025-03-14T12:00:00Z; a copy of an object that was in limbo (restored from a backup, or re-created from its manifest) counts down anew`,
		},
		{
			name: "copy without a delay left: deleted, as any orphan without one",
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(stampKey, "2025-03-14T10:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionDelete},
		},
		{
			name: "copy made before its original's deadline keeps that deadline",
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T11:30:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionDelete, Delay: time.Hour,
				Stamp: at("2025-03-14T11:30:00Z"), Deadline: at("2025-03-14T12:30:00Z")},
		},
		{
			name: "deadline less than a minute before the creation (clocks apart, an expedite): kept",
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(delayKey, "0s", stampKey, "2025-03-14T11:59:01Z")},
			want: softdelete.Decision{Action: softdelete.ActionDelete,
				Stamp: at("2025-03-14T11:59:01Z"), Deadline: at("2025-03-14T11:59:01Z")},
		},
		{
			name: "deadline a minute before the creation: the countdown restarts",
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(delayKey, "0s", stampKey, "2025-03-14T11:58:59Z")},
			want:    softdelete.Decision{Action: softdelete.ActionRestamp, Stamp: nowSecond, Deadline: nowSecond},
			wantErr: `limbo.dev/deletionTimestamp "2025-03-14T11:58:59Z": its countdown ended at 2025-03-14T11:58:59Z, before this object was created at 2025-03-14T12:00:00Z; a copy of an object that was in limbo (restored from a backup, or re-created from its manifest) counts down anew`,
		},
		{
			// A clock behind the API server's by more than the delay and the
			// slack: stamped at now, the next pass would find the same again.
			name: "copy restamped by a clock behind the API server's: from its creation",
			now:  at("2025-03-14T11:55:00.5Z"),
			state: softdelete.State{Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(delayKey, "1m", stampKey, "2025-03-14T11:50:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Delay: time.Minute, Stamp: at("2025-03-14T12:00:00Z"),
				Deadline: at("2025-03-14T12:01:00Z"), RequeueAfter: 6*time.Minute - 500*time.Millisecond},
			wantErr: `limbo.dev/deletionTimestamp "2025-03-14T11:50:00Z": its countdown ended at 2025-03-14T11:51:00Z, before this object was created at 2025-03-14T12:00:00Z; a copy of an object that was in limbo (restored from a backup, or re-created from its manifest) counts down anew`,
		},
		{
			name: "copy desired again: cancelled, as any",
			state: softdelete.State{Desired: true, Created: at("2025-03-14T12:00:00Z"),
				Annotations: annotations(delayKey, "1h", stampKey, "2025-03-14T10:00:00Z")},
			want: softdelete.Decision{Action: softdelete.ActionCancel},
		},
		{
			name:  "unparsable stamp, zero delay",
			state: softdelete.State{Annotations: annotations(delayKey, "0s", stampKey, "garbage")},
			want: softdelete.Decision{Action: softdelete.ActionRestamp, Stamp: nowSecond,
				Deadline: nowSecond, RequeueAfter: 0},
			wantErr: `invalid limbo.dev/deletionTimestamp "garbage": not an RFC 3339 time; the countdown restarts`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			when := tt.now
			if when.IsZero() {
				when = now
			}
			got := softdelete.Decide(when, tt.state)
			gotErr := ""
			if got.Err != nil {
				gotErr = got.Err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("Err = %q, want %q", gotErr, tt.wantErr)
			}
			got.Err = nil
			checkDecision(t, got, tt.want)
		})
	}
}

// formatNow is the stamp Decide writes at now.
func formatNow() string { return softdelete.FormatStamp(now) }

// checkDecision compares all fields but Err, times with Equal (so locations do
// not matter) and also checks that Stamp and Deadline are in UTC when set.
func checkDecision(t *testing.T, got, want softdelete.Decision) {
	t.Helper()
	if got.Action != want.Action {
		t.Errorf("Action = %s, want %s", got.Action, want.Action)
	}
	if got.Delay != want.Delay {
		t.Errorf("Delay = %v, want %v", got.Delay, want.Delay)
	}
	if !got.Stamp.Equal(want.Stamp) {
		t.Errorf("Stamp = %v, want %v", got.Stamp, want.Stamp)
	}
	if !got.Deadline.Equal(want.Deadline) {
		t.Errorf("Deadline = %v, want %v", got.Deadline, want.Deadline)
	}
	if got.RequeueAfter != want.RequeueAfter {
		t.Errorf("RequeueAfter = %v, want %v", got.RequeueAfter, want.RequeueAfter)
	}
	for name, ts := range map[string]time.Time{"Stamp": got.Stamp, "Deadline": got.Deadline} {
		if !ts.IsZero() && ts.Location() != time.UTC {
			t.Errorf("%s location = %v, want UTC", name, ts.Location())
		}
	}
}

// TestStampRoundTrip checks that a stamp written for Stamp or Restamp is read
// back as the same Stamp and Deadline on the next pass.
func TestStampRoundTrip(t *testing.T) {
	for _, delay := range []string{"0s", "1s", "90s", "1h30m", "720h"} {
		for _, state := range []softdelete.State{
			{Annotations: annotations(delayKey, delay)},
			{Annotations: annotations(delayKey, delay, stampKey, "not a time")},
		} {
			first := softdelete.Decide(now, state)
			if first.Action != softdelete.ActionStamp && first.Action != softdelete.ActionRestamp {
				t.Fatalf("delay %s: Action = %s, want Stamp or Restamp", delay, first.Action)
			}
			state.Annotations[stampKey] = softdelete.FormatStamp(first.Stamp)
			state.PendingLabel = true

			// Come back when asked to: exactly at the deadline.
			later := now.Add(first.RequeueAfter)
			next := softdelete.Decide(later, state)
			if next.Action != softdelete.ActionDelete {
				t.Errorf("delay %s: at now+RequeueAfter Action = %s, want Delete", delay, next.Action)
			}
			if !next.Stamp.Equal(first.Stamp) || !next.Deadline.Equal(first.Deadline) {
				t.Errorf("delay %s: read back Stamp %v Deadline %v, wrote Stamp %v Deadline %v",
					delay, next.Stamp, next.Deadline, first.Stamp, first.Deadline)
			}
			if first.RequeueAfter > 0 {
				before := softdelete.Decide(later.Add(-time.Nanosecond), state)
				if before.Action != softdelete.ActionWait || before.RequeueAfter != time.Nanosecond {
					t.Errorf("delay %s: 1ns before the deadline got %s after %v, want Wait after 1ns",
						delay, before.Action, before.RequeueAfter)
				}
			}
		}
	}
}

// ParseDelayOf names the delay it parses: a plugin resource's plugin.deletionDelay
// is reported as the field the user wrote, in the annotation's words.
func TestParseDelayOf(t *testing.T) {
	for value, want := range map[string]string{
		"10 minutes": `invalid plugin.deletionDelay "10 minutes": not a duration (Go syntax: 10m, 24h, 1h30m)`,
		"1d":         `invalid plugin.deletionDelay "1d": not a duration (Go syntax: 10m, 24h, 1h30m)`,
		"-1h":        `invalid plugin.deletionDelay "-1h": must not be negative`,
		"24h":        ``,
	} {
		_, err := softdelete.ParseDelayOf("plugin.deletionDelay", value)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("ParseDelayOf(plugin.deletionDelay, %q) error = %q, want %q", value, got, want)
		}
	}
}

func TestParseDelay(t *testing.T) {
	tests := []struct {
		value   string
		want    time.Duration
		wantErr string
	}{
		{value: "0", want: 0},
		{value: "0s", want: 0},
		{value: "-0s", want: 0},
		{value: "500ms", want: 500 * time.Millisecond},
		{value: "5m", want: 5 * time.Minute},
		{value: "1h30m", want: 90 * time.Minute},
		{value: "720h", want: 720 * time.Hour},
		{value: "abc", wantErr: `invalid limbo.dev/deletionDelay "abc": not a duration (Go syntax: 10m, 24h, 1h30m)`},
		{value: "", wantErr: `invalid limbo.dev/deletionDelay "": not a duration (Go syntax: 10m, 24h, 1h30m)`},
		{value: " 5m", wantErr: `invalid limbo.dev/deletionDelay " 5m": not a duration (Go syntax: 10m, 24h, 1h30m)`},
		{value: "1d", wantErr: `invalid limbo.dev/deletionDelay "1d": not a duration (Go syntax: 10m, 24h, 1h30m)`},
		{value: "-5m", wantErr: `invalid limbo.dev/deletionDelay "-5m": must not be negative`},
		{value: "-1ns", wantErr: `invalid limbo.dev/deletionDelay "-1ns": must not be negative`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := softdelete.ParseDelay(tt.value)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("ParseDelay(%q) error = %q, want %q", tt.value, gotErr, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseDelay(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

func TestFormatStamp(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{now, "2025-03-14T12:30:45Z"},
		{nowSecond, "2025-03-14T12:30:45Z"},
		{time.Date(2025, time.March, 14, 12, 30, 45, 999_999_999, time.UTC), "2025-03-14T12:30:45Z"},
		{time.Date(2025, time.March, 14, 13, 30, 45, 0, time.FixedZone("CET", 3600)), "2025-03-14T12:30:45Z"},
		{time.Date(2025, time.March, 14, 0, 30, 0, 0, time.FixedZone("EST", -5*3600)), "2025-03-14T05:30:00Z"},
	}
	for _, tt := range tests {
		if got := softdelete.FormatStamp(tt.t); got != tt.want {
			t.Errorf("FormatStamp(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestExpediteStamp(t *testing.T) {
	tests := []struct {
		delay time.Duration
		want  string
	}{
		{0, "2025-03-14T12:30:45Z"},
		{time.Hour, "2025-03-14T11:30:45Z"},
		{500 * time.Millisecond, "2025-03-14T12:30:44Z"},
		{720 * time.Hour, "2025-02-12T12:30:45Z"},
	}
	for _, tt := range tests {
		got := softdelete.ExpediteStamp(now, tt.delay)
		if got != tt.want {
			t.Errorf("ExpediteStamp(now, %v) = %q, want %q", tt.delay, got, tt.want)
		}

		// Round trip: an orphan with the expedited stamp is deleted at now.
		state := softdelete.State{PendingLabel: true, Annotations: annotations(
			delayKey, tt.delay.String(), stampKey, got)}
		d := softdelete.Decide(now, state)
		if d.Action != softdelete.ActionDelete {
			t.Errorf("delay %v: Decide on the expedited stamp = %s, want Delete", tt.delay, d.Action)
		}
		if d.Deadline.After(now) {
			t.Errorf("delay %v: expedited deadline %v is after now %v", tt.delay, d.Deadline, now)
		}
	}

	// On a whole second the deadline is exactly now.
	state := softdelete.State{Annotations: annotations(
		delayKey, "1h", stampKey, softdelete.ExpediteStamp(nowSecond, time.Hour))}
	if d := softdelete.Decide(nowSecond, state); d.Action != softdelete.ActionDelete || !d.Deadline.Equal(nowSecond) {
		t.Errorf("Decide on an expedited stamp at a whole second = %s with deadline %v, want Delete at %v",
			d.Action, d.Deadline, nowSecond)
	}
}

// TestDecideStampYearRange: a stamp that parses but whose UTC time falls
// outside years 0001–9999 (a hand-written zone offset carries it over) is
// treated like an unparsable one: Restamp with a warning, never Wait or
// Delete on it. The stamp is listed in status.pendingDeletions, a date-time
// field: a five-digit or negative year there made every status write of the
// Bundle fail. Stamps at the ends of the range stay valid, and every Stamp and
// Deadline Decide returns formats as a date-time the API accepts.
func TestDecideStampYearRange(t *testing.T) {
	const outside = "outside years 0001 to 9999 in UTC; the countdown restarts"
	tests := []struct {
		name, delay, stamp string
		want               softdelete.Action
		wantErr            string // "" means nil
	}{
		{name: "end of 9999 at -01:00 is year 10000 in UTC", delay: "24h", stamp: "9999-12-31T23:59:59-01:00",
			want: softdelete.ActionRestamp, wantErr: `invalid limbo.dev/deletionTimestamp "9999-12-31T23:59:59-01:00": ` + outside},
		{name: "end of 9999 at -00:01 is year 10000 in UTC", delay: "0s", stamp: "9999-12-31T23:59:00-00:01",
			want: softdelete.ActionRestamp, wantErr: `invalid limbo.dev/deletionTimestamp "9999-12-31T23:59:00-00:01": ` + outside},
		{name: "start of 0000 at +01:00 is year -1 in UTC", delay: "0s", stamp: "0000-01-01T00:00:00+01:00",
			want: softdelete.ActionRestamp, wantErr: `invalid limbo.dev/deletionTimestamp "0000-01-01T00:00:00+01:00": ` + outside},
		{name: "year 0000 in UTC", delay: "1h", stamp: "0000-06-01T00:00:00Z",
			want: softdelete.ActionRestamp, wantErr: `invalid limbo.dev/deletionTimestamp "0000-06-01T00:00:00Z": ` + outside},
		{name: "last second of year 0000 in UTC", delay: "1h", stamp: "0000-12-31T23:59:59Z",
			want: softdelete.ActionRestamp, wantErr: `invalid limbo.dev/deletionTimestamp "0000-12-31T23:59:59Z": ` + outside},
		{name: "0001 at +01:00 is year 0000 in UTC", delay: "1h", stamp: "0001-01-01T00:30:00+01:00",
			want: softdelete.ActionRestamp, wantErr: `invalid limbo.dev/deletionTimestamp "0001-01-01T00:30:00+01:00": ` + outside},

		// The ends of the range stay valid.
		{name: "first instant of 0001", delay: "1h", stamp: "0001-01-01T00:00:00Z", want: softdelete.ActionDelete},
		{name: "0000 at -01:00 is year 0001 in UTC", delay: "0s", stamp: "0000-12-31T23:00:00-01:00", want: softdelete.ActionDelete},
		{name: "last second of 9999", delay: "24h", stamp: "9999-12-31T23:59:59Z", want: softdelete.ActionWait},
		{name: "last second of 9999, fractional", delay: "0s", stamp: "9999-12-31T23:59:59.999999999Z", want: softdelete.ActionWait},
		{name: "end of 9999 at +01:00 stays in 9999 in UTC", delay: "1h", stamp: "9999-12-31T23:59:59+01:00", want: softdelete.ActionWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := softdelete.Decide(now, softdelete.State{PendingLabel: true, Annotations: annotations(delayKey, tt.delay, stampKey, tt.stamp)})
			if d.Action != tt.want {
				t.Errorf("Action = %s, want %s", d.Action, tt.want)
			}
			gotErr := ""
			if d.Err != nil {
				gotErr = d.Err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("Err = %q, want %q", gotErr, tt.wantErr)
			}
			if tt.want == softdelete.ActionRestamp && !d.Stamp.Equal(nowSecond) {
				t.Errorf("Restamp Stamp = %v, want now %v", d.Stamp, nowSecond)
			}
			// What status.pendingDeletions would hold: a date-time, or null
			// (the zero time, which the API server prunes).
			for name, ts := range map[string]time.Time{"Stamp": d.Stamp, "Deadline": d.Deadline} {
				raw, err := metav1.NewTime(ts).MarshalJSON()
				if err != nil {
					t.Fatalf("%s %v: MarshalJSON: %v", name, ts, err)
				}
				if s := string(raw); s != "null" && !strfmt.IsDateTime(strings.Trim(s, `"`)) {
					t.Errorf("%s %v marshals as %s, not a date-time", name, ts, s)
				}
			}
		})
	}
}

// InvalidDelayValue reads back the value ParseDelay's error quotes, from a
// message that carries it (a Bundle's status entry: "...; never deleted until
// fixed", possibly after other text), and nothing from any other message.
func TestInvalidDelayValue(t *testing.T) {
	for _, value := range []string{"forever", "-5m", "", `a "quoted" delay`, "ünïcode"} {
		_, err := softdelete.ParseDelay(value)
		if err == nil {
			t.Fatalf("ParseDelay(%q) accepted it", value)
		}
		for _, msg := range []string{err.Error(), err.Error() + "; never deleted until fixed", "in cluster c; " + err.Error()} {
			if got, ok := softdelete.InvalidDelayValue(msg); !ok || got != value {
				t.Errorf("InvalidDelayValue(%q) = %q, %v; want %q", msg, got, ok, value)
			}
		}
	}
	for _, msg := range []string{"", "waiting for every resource of the Bundle to be Ready", `invalid limbo.dev/deletionTimestamp "x": not an RFC 3339 time`, "invalid limbo.dev/deletionDelay unquoted"} {
		if got, ok := softdelete.InvalidDelayValue(msg); ok {
			t.Errorf("InvalidDelayValue(%q) = %q, want none", msg, got)
		}
	}
}

// Lengthens: a template's delay is written on a live object its pass did not
// apply only to give it a longer countdown.
func TestLengthens(t *testing.T) {
	for _, tc := range []struct {
		live     map[string]string
		declared string
		want     bool
	}{
		{nil, "1h", true},
		{annotations(delayKey, "10m"), "1h", true},
		{annotations(delayKey, "1h"), "1h", false},
		{annotations(delayKey, "2h"), "1h", false},
		{annotations(delayKey, "soon"), "1h", false}, // never deleted as it is
		{annotations(delayKey, "10m"), "", false},    // no delay declared
		{nil, "", false},
		{nil, "-1h", false},
		{nil, "0s", true}, // a zero delay still records a stamp: the audit trail
	} {
		if got := softdelete.Lengthens(tc.live, tc.declared); got != tc.want {
			t.Errorf("Lengthens(%v, %q) = %v, want %v", tc.live, tc.declared, got, tc.want)
		}
	}
}

// A plugin's item restored from a backup with its old, long-due stamp counts
// down anew, as any copy; one a teardown counts from the Bundle's deletion
// (CountFrom) keeps a deadline that may come before the item was made.
func TestItemSetDecideACopy(t *testing.T) {
	item := func() softdelete.Item {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("csi-baremetal.dell.com/v1")
		u.SetKind("Volume")
		u.SetName("restored")
		u.SetCreationTimestamp(metav1.NewTime(now.Add(-time.Hour)))
		u.SetAnnotations(annotations(stampKey, "2025-03-10T00:00:00Z"))
		return softdelete.Item{Object: u}
	}
	created := at("2025-03-01T00:00:00Z") // the Bundle's
	if d := (softdelete.ItemSet{Delay: "1h", NotBefore: created}).Decide(now, item()); d.Action != softdelete.ActionRestamp {
		t.Errorf("a restored item's old stamp: %s, want Restamp", d.Action)
	}
	if d := (softdelete.ItemSet{Delay: "1h", NotBefore: created, CountFrom: at("2025-03-10T00:00:00Z")}).Decide(now, item()); d.Action != softdelete.ActionDelete {
		t.Errorf("an item a teardown counts from the Bundle's deletion: %s, want Delete", d.Action)
	}
}
