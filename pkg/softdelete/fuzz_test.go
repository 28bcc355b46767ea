package softdelete

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// FuzzParseDelay: any annotation value is either a delay ≥ 0 that formats and
// parses back to itself, or an error that names the annotation and the value;
// never a panic.
func FuzzParseDelay(f *testing.F) {
	for _, seed := range []string{"", "0", "0s", "90s", "24h", "1h30m", "-5m", "-0s", "1.5s", "tomorrow", "5d",
		"9223372036854775807ns", "9223372036854775808ns", "2562047h47m16.854775807s", "+3s", ".5s", "1e3s", "3µs", "\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		delay, err := ParseDelay(value)
		if err != nil {
			if delay != 0 {
				t.Errorf("ParseDelay(%q) = %v with error %v; want 0", value, delay, err)
			}
			if !strings.Contains(err.Error(), limbov1alpha1.AnnotationDeletionDelay) {
				t.Errorf("ParseDelay(%q) error %q does not name the annotation", value, err)
			}
			return
		}
		if delay < 0 {
			t.Fatalf("ParseDelay(%q) = %v: negative", value, delay)
		}
		again, err := ParseDelay(delay.String())
		if err != nil || again != delay {
			t.Errorf("ParseDelay(%q) = %v, but ParseDelay(%q) = %v, %v", value, delay, delay.String(), again, err)
		}
	})
}

// FuzzDecide: for any delay and stamp annotations at any time, Decide never
// panics, never deletes what has an invalid delay or an unparsable stamp,
// deletes only once the deadline has come, and writes stamps that parse back;
// an expedited stamp makes the deadline come now.
func FuzzDecide(f *testing.F) {
	now := time.Date(2026, 11, 22, 17, 0, 0, 500_000_000, time.UTC).Unix()
	f.Add("90s", "2026-11-22T17:00:00Z", now, int32(500_000_000), false)
	f.Add("0s", "", now, int32(0), false)
	f.Add("24h", "2026-11-21T17:00:00Z", now, int32(0), false)
	f.Add("1h", "yesterday", now, int32(0), true)
	f.Add("-5m", "2026-11-22T17:00:00Z", now, int32(0), false)
	f.Add("", "", now, int32(0), true)
	f.Add("1s", "2026-11-22T17:00:00+02:00", now, int32(999_999_999), false)
	f.Add("2562047h", "9999-12-31T23:59:59Z", now, int32(0), false)
	f.Add("3s", "0000-01-01T00:00:00Z", int64(0), int32(0), false)
	f.Fuzz(func(t *testing.T, delayValue, stampValue string, unix int64, nanos int32, pending bool) {
		// Any instant from 1970 to 2200: the clock of a real controller.
		const span = 230 * 365 * 24 * 3600
		at := time.Unix((unix%span+span)%span, int64(nanos)%1e9).UTC()
		annotations := map[string]string{}
		if delayValue != "" {
			annotations[limbov1alpha1.AnnotationDeletionDelay] = delayValue
		}
		if stampValue != "" {
			annotations[limbov1alpha1.AnnotationDeletionTimestamp] = stampValue
		}
		if d := Decide(at, State{Desired: true, Annotations: annotations, PendingLabel: pending}); d.Action != ActionNone && d.Action != ActionCancel {
			t.Fatalf("a desired item got %s", d.Action)
		}
		d := Decide(at, State{Annotations: annotations, PendingLabel: pending})
		delay, delayErr := ParseDelay(delayValue)
		_, stampErr := time.Parse(time.RFC3339, stampValue)
		switch {
		case delayValue == "":
			if d.Action != ActionDelete {
				t.Fatalf("no delay: got %s, want Delete", d.Action)
			}
			return
		case delayErr != nil:
			if d.Action != ActionInvalid || d.Err == nil {
				t.Fatalf("invalid delay %q: got %s (%v), want Invalid with an error", delayValue, d.Action, d.Err)
			}
			return
		case stampValue != "" && stampErr != nil:
			if d.Action != ActionRestamp {
				t.Fatalf("unparsable stamp %q: got %s, want Restamp", stampValue, d.Action)
			}
		}
		if d.Delay != delay {
			t.Errorf("Delay = %v, want %v", d.Delay, delay)
		}
		switch d.Action {
		case ActionStamp, ActionRestamp:
			written := FormatStamp(d.Stamp)
			parsed, err := time.Parse(time.RFC3339, written)
			if err != nil || !parsed.Equal(d.Stamp) {
				t.Fatalf("stamp %v formats as %q, which parses as %v, %v", d.Stamp, written, parsed, err)
			}
			if d.Stamp.After(at) || at.Sub(d.Stamp) >= time.Second {
				t.Errorf("new stamp %v is not now (%v) to the second", d.Stamp, at)
			}
			if d.RequeueAfter < 0 {
				t.Errorf("RequeueAfter = %v", d.RequeueAfter)
			}
		case ActionWait:
			if !at.Before(d.Deadline) || d.RequeueAfter != d.Deadline.Sub(at) {
				t.Errorf("Wait at %v with deadline %v and RequeueAfter %v", at, d.Deadline, d.RequeueAfter)
			}
		case ActionDelete:
			if at.Before(d.Deadline) {
				t.Fatalf("Delete at %v before the deadline %v", at, d.Deadline)
			}
		default:
			t.Fatalf("an orphan with a valid delay got %s", d.Action)
		}
		want := d.Stamp.Add(delay)
		if want.After(lastDeadline) {
			want = lastDeadline
		}
		if !d.Deadline.Equal(want) {
			t.Errorf("Deadline %v is not Stamp %v + Delay %v (clamped to %v)", d.Deadline, d.Stamp, delay, lastDeadline)
		}

		// kubectl limbo expedite: the stamp it writes makes the deadline now.
		annotations[limbov1alpha1.AnnotationDeletionTimestamp] = ExpediteStamp(at, delay)
		if e := Decide(at, State{Annotations: annotations}); e.Action != ActionDelete {
			t.Errorf("after expedite (stamp %q, delay %v) at %v: got %s, want Delete", annotations[limbov1alpha1.AnnotationDeletionTimestamp], delay, at, e.Action)
		}
	})
}

// FuzzItemSetDecide: for a plugin's item whatever its annotations, the
// resource's delay and the instant no countdown of the owner ends before
// (ItemSet.NotBefore: the Bundle's creation or teardown), at any time, a
// delete comes only at a deadline that is both past and not before that
// instant (an earlier Bundle's countdown is never this one's), a stamp is never
// written before it, and an item with an invalid resource delay is never
// deleted.
func FuzzItemSetDecide(f *testing.F) {
	now := time.Date(2026, 11, 22, 17, 0, 0, 500_000_000, time.UTC).Unix()
	f.Add("90s", "2026-11-22T16:00:00Z", now, int64(3600), true)
	f.Add("90s", "2026-11-22T17:00:00Z", now, int64(-60), true)
	f.Add("", "", now, int64(0), false)
	f.Add("", "2026-11-22T16:59:00Z", now, int64(30), true)
	f.Add("1h", "garbage", now, int64(-7200), true)
	f.Add("-1s", "", now, int64(10), true)
	f.Add("0s", "2026-11-22T17:00:01Z", now, int64(1), true)
	f.Fuzz(func(t *testing.T, delayValue, stampValue string, unix, notBeforeOffset int64, hasNotBefore bool) {
		const span = 230 * 365 * 24 * 3600
		at := time.Unix((unix%span+span)%span, 0).UTC()
		set := ItemSet{Delay: delayValue}
		if hasNotBefore {
			set.NotBefore = at.Add(time.Duration(notBeforeOffset%(365*24*3600)) * time.Second)
		}
		item := &metav1.PartialObjectMetadata{}
		if stampValue != "" {
			item.SetAnnotations(map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: stampValue})
		}
		d := set.Decide(at, Item{Object: item})
		start := truncateStamp(set.NotBefore)
		if _, err := ParseDelay(delayValue); delayValue != "" && err != nil {
			if d.Action == ActionDelete {
				t.Fatalf("invalid delay %q: deleted", delayValue)
			}
			return
		}
		switch d.Action {
		case ActionDelete:
			if at.Before(d.Deadline) {
				t.Fatalf("Delete at %v before the deadline %v", at, d.Deadline)
			}
			if !set.NotBefore.IsZero() && delayValue != "" && d.Deadline.Before(start) {
				t.Fatalf("Delete on a deadline %v before NotBefore %v (stamp %q, delay %q)", d.Deadline, set.NotBefore, stampValue, delayValue)
			}
		case ActionStamp, ActionRestamp:
			if !set.NotBefore.IsZero() && d.Stamp.Before(start) {
				t.Fatalf("stamp %v written before NotBefore %v", d.Stamp, set.NotBefore)
			}
			if d.RequeueAfter < 0 || !d.Deadline.Equal(d.Stamp.Add(d.Delay)) && !d.Deadline.Equal(lastDeadline) {
				t.Fatalf("stamp %v, delay %v: deadline %v, RequeueAfter %v", d.Stamp, d.Delay, d.Deadline, d.RequeueAfter)
			}
		}
	})
}

// FuzzDecideCopy: an orphan created at any instant within a day either side of
// now (a copy of an object in limbo, or a controller's clock apart from the API
// server's), with any delay and stamp, is never deleted by a countdown that
// ended more than CopySlack before it was created, and the stamp a Stamp or
// Restamp writes, decided again at the same instant, is not restamped again.
func FuzzDecideCopy(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 250_000_000, time.UTC).Unix()
	f.Add("1h", "2020-01-01T00:00:00Z", now, int64(0))
	f.Add("1m", "2026-11-30T11:50:00Z", now, int64(-300))
	f.Add("0s", "", now, int64(3600))
	f.Add("24h", "2026-11-29T11:00:00Z", now, int64(-86400))
	f.Fuzz(func(t *testing.T, delayValue, stampValue string, unix int64, createdOffset int64) {
		const span = 230 * 365 * 24 * 3600
		at := time.Unix((unix%span+span)%span, 0).UTC()
		created := at.Add(time.Duration(createdOffset%86400) * time.Second)
		annotations := map[string]string{limbov1alpha1.AnnotationDeletionDelay: delayValue}
		if stampValue != "" {
			annotations[limbov1alpha1.AnnotationDeletionTimestamp] = stampValue
		}
		d := Decide(at, State{Annotations: annotations, Created: created})
		if d.Action == ActionDelete && !d.Deadline.IsZero() && d.Deadline.Before(created.Add(-CopySlack)) {
			t.Fatalf("deleted by a countdown that ended at %v, the object created at %v", d.Deadline, created)
		}
		if d.Action != ActionStamp && d.Action != ActionRestamp {
			return
		}
		annotations[limbov1alpha1.AnnotationDeletionTimestamp] = FormatStamp(d.Stamp)
		if again := Decide(at, State{Annotations: annotations, Created: created}); again.Action == ActionRestamp {
			t.Fatalf("the stamp %s written at %v for an object created at %v is restamped again: %v", FormatStamp(d.Stamp), at, created, again.Err)
		}
	})
}
