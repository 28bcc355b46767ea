package softdelete

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Action is what the caller must do with an item, as decided by Decide.
type Action string

const (
	// ActionNone: the item is desired and not in limbo; nothing to do.
	ActionNone Action = "None"
	// ActionCancel: the item is desired again but carries a stamp or the
	// pending-deletion label; remove both.
	ActionCancel Action = "Cancel"
	// ActionStamp: the orphan has a valid delay and no stamp; start the countdown
	// by writing Decision.Stamp (see FormatStamp) and the pending-deletion label,
	// then come back after Decision.RequeueAfter.
	ActionStamp Action = "Stamp"
	// ActionRestamp: the orphan's stamp is unparsable, or its UTC time is outside
	// years 0001–9999, which the status date-time fields cannot hold; restart
	// the countdown exactly as for ActionStamp, and report Decision.Err as a
	// warning.
	ActionRestamp Action = "Restamp"
	// ActionWait: the countdown is running; come back after Decision.RequeueAfter.
	ActionWait Action = "Wait"
	// ActionDelete: delete the orphan now. Deleting with UID and resourceVersion
	// preconditions, so that a re-created object of the same name survives and an
	// object changed since it was read is decided again, is the caller's job.
	ActionDelete Action = "Delete"
	// ActionInvalid: the orphan's delay is invalid; never delete it, and report
	// Decision.Err.
	ActionInvalid Action = "Invalid"
)

// State is what Decide reads of an item: a live object, or the Tombstone that
// stands in for an external item.
type State struct {
	// Desired is whether the item is still wanted, for example still in its
	// Bundle. An item that is not desired is an orphan.
	Desired bool
	// Annotations are the item's annotations; Decide reads
	// limbo.dev/deletionDelay and limbo.dev/deletionTimestamp. Nil is fine.
	Annotations map[string]string
	// PendingLabel is whether the item carries the limbo.dev/pending-deletion
	// label.
	PendingLabel bool
	// Created is the item's creationTimestamp; zero when unknown. A countdown
	// that ended before it (by more than CopySlack) is not the item's own.
	Created time.Time
}

// CopySlack is how far before its object's creation a countdown may have
// ended and still be the object's: the controller that stamped it, the
// kubectl that expedited it and the API server that set the creationTimestamp
// read different clocks.
const CopySlack = time.Minute

// Decision is the outcome of Decide. Delay, Stamp and Deadline are set only for
// orphans whose countdown they describe; they are zero for None, Cancel, Invalid
// and for a Delete of an orphan without a delay.
type Decision struct {
	Action Action
	// Delay is the parsed limbo.dev/deletionDelay.
	Delay time.Duration
	// Stamp is the start of the countdown: the parsed stamp for Wait and Delete,
	// the new stamp to write for Stamp and Restamp.
	Stamp time.Time
	// Deadline is Stamp + Delay, the time the orphan is deleted.
	Deadline time.Time
	// RequeueAfter is how long from now the caller must come back, for Stamp,
	// Restamp and Wait: Deadline - now, but never negative. It is always > 0 for
	// Wait; for Stamp and Restamp it is 0 when the deadline has already come (a
	// zero delay), which means "come back at once" — with controller-runtime,
	// RequeueAfter: 0 alone does not requeue, so the caller must ask for it.
	RequeueAfter time.Duration
	// Err is why the delay is invalid (Invalid) or a warning describing the
	// unparsable stamp (Restamp); nil otherwise.
	Err error
}

// Decide returns what to do with an item at time now. It is the contract of
// DESIGN.md §4:
//
//	desired, with a stamp or the pending label   Cancel
//	desired, otherwise                           None
//	orphan without limbo.dev/deletionDelay       Delete
//	orphan with an invalid delay                 Invalid (never deleted)
//	orphan with delay D and no stamp             Stamp: stamp = now, to the second (its creation if later)
//	orphan with an unparsable stamp              Restamp: as Stamp, with a warning
//	  (or one outside years 0001–9999 in UTC)
//	orphan with stamp T, now < T+D               Wait until T+D
//	orphan with stamp T, now ≥ T+D               Delete
//	orphan with stamp T, T+D before its creation Restamp: as Stamp, with a warning
//
// The last rule is for a copy of an object in limbo — restored from a backup,
// re-created from its manifest, kubectl replace --force — which carries its
// original's stamp: "a different object: the old countdown never deletes it"
// (docs/soft-delete.md). A copy made before its original's deadline keeps that
// deadline: nothing on it tells it from the original.
//
// A desired item is never Invalid: its delay is not read. A zero delay still
// records a stamp, as an audit trail; the orphan is deleted on the pass that
// follows. A stamp in the future is valid: the orphan waits until T+D.
func Decide(now time.Time, s State) Decision {
	stampValue, stamped := s.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]
	if s.Desired {
		if stamped || s.PendingLabel {
			return Decision{Action: ActionCancel}
		}
		return Decision{Action: ActionNone}
	}

	delayValue, ok := s.Annotations[limbov1alpha1.AnnotationDeletionDelay]
	if !ok {
		return Decision{Action: ActionDelete}
	}
	delay, err := ParseDelay(delayValue)
	if err != nil {
		return Decision{Action: ActionInvalid, Err: err}
	}

	if !stamped {
		return startCountdown(ActionStamp, now, s.Created, delay, nil)
	}
	stamp, err := time.Parse(time.RFC3339, stampValue)
	if err != nil {
		return startCountdown(ActionRestamp, now, s.Created, delay, fmt.Errorf(
			"invalid %s %q: not an RFC 3339 time; the countdown restarts",
			limbov1alpha1.AnnotationDeletionTimestamp, stampValue))
	}

	if y := stamp.UTC().Year(); y < firstStampYear || y > lastDeadline.Year() {
		// Parsable, but written by hand with a zone offset that carries it out of
		// years 0001–9999 in UTC (9999-12-31T23:59:59-01:00 is in year 10000):
		// the stamp is listed in status.pendingDeletions, whose date-time fields
		// hold four-digit years only, so every status write would fail.
		return startCountdown(ActionRestamp, now, s.Created, delay, fmt.Errorf(
			"invalid %s %q: outside years 0001 to 9999 in UTC; the countdown restarts",
			limbov1alpha1.AnnotationDeletionTimestamp, stampValue))
	}

	d := Decision{Delay: delay, Stamp: stamp.UTC(), Deadline: stamp.UTC().Add(delay)}
	if d.Deadline.After(lastDeadline) {
		d.Deadline = lastDeadline
	}
	if !s.Created.IsZero() && d.Deadline.Before(s.Created.Add(-CopySlack)) {
		return startCountdown(ActionRestamp, now, s.Created, delay, fmt.Errorf(
			"%s %q: its countdown ended at %s, before this object was created at %s; a copy of an object that was in limbo (restored from a backup, or re-created from its manifest) counts down anew",
			limbov1alpha1.AnnotationDeletionTimestamp, stampValue, d.Deadline.Format(time.RFC3339), s.Created.UTC().Format(time.RFC3339)))
	}
	if now.Before(d.Deadline) {
		d.Action = ActionWait
		d.RequeueAfter = d.Deadline.Sub(now)
		return d
	}
	d.Action = ActionDelete
	return d
}

// lastDeadline is the latest deadline a Decision names. A stamp set by hand near
// the end of year 9999 plus its delay would fall past it: RFC 3339, and so
// metav1.Time and the status fields the deadline is written to, hold four-digit
// years only, and such a deadline would make every status write fail. Clamped, the
// object still waits (for about eight thousand years).
var lastDeadline = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)

// firstStampYear is the earliest UTC year of a valid stamp. The API's date-time
// would take year 0000, but it is before Go's zero time (0001-01-01, which
// metav1.Time treats as unset) and not a year many clients accept; a stamp that
// early is a forged one, and restarting its countdown is the safe direction.
const firstStampYear = 1

// startCountdown is the Decision of Stamp and Restamp: a new stamp at now, or
// at created (the object's creation, zero if unknown) when now is before it —
// by a controller's clock behind the API server's, a stamp at now could end
// before the creation, and be restarted by the next pass as a copy's.
func startCountdown(action Action, now, created time.Time, delay time.Duration, warning error) Decision {
	stamp := truncateStamp(now)
	if c := truncateStamp(created); stamp.Before(c) {
		stamp = c
	}
	deadline := stamp.Add(delay)
	return Decision{
		Action:       action,
		Delay:        delay,
		Stamp:        stamp,
		Deadline:     deadline,
		RequeueAfter: max(deadline.Sub(now), 0),
		Err:          warning,
	}
}

// Lengthens reports whether declared, the delay a Bundle's template declares
// for an object, would give the object, whose annotations are live, a longer
// countdown than its own delay: declared is valid, and live has no delay or a
// shorter one. An invalid live delay is never replaced: an object with one is
// never deleted.
func Lengthens(live map[string]string, declared string) bool {
	want, err := ParseDelay(declared)
	if err != nil {
		return false
	}
	value, ok := live[limbov1alpha1.AnnotationDeletionDelay]
	if !ok {
		return true
	}
	have, err := ParseDelay(value)
	return err == nil && have < want
}

// ParseDelay parses a limbo.dev/deletionDelay value: a Go duration (see
// time.ParseDuration) that is not negative. The empty string is invalid. Spec
// validation uses it too, so that both report the same error text, for example
//
//	invalid limbo.dev/deletionDelay "abc": not a duration (Go syntax: 10m, 24h, 1h30m)
//	invalid limbo.dev/deletionDelay "-5m": must not be negative
func ParseDelay(value string) (time.Duration, error) {
	return ParseDelayOf(limbov1alpha1.AnnotationDeletionDelay, value)
}

// ParseDelayOf is ParseDelay of a delay written elsewhere than in the annotation
// (a plugin resource's plugin.deletionDelay): its errors name what the user wrote,
// in the annotation's words:
//
//	invalid plugin.deletionDelay "10 minutes": not a duration (Go syntax: 10m, 24h, 1h30m)
//
// Go's own error ("time: unknown unit \" minutes\" in duration ...") is left
// out: it says what the parser met, not what it wants.
func ParseDelayOf(name, value string) (time.Duration, error) {
	delay, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: not a duration (Go syntax: 10m, 24h, 1h30m)", name, value)
	}
	if delay < 0 {
		return 0, fmt.Errorf("invalid %s %q: must not be negative", name, value)
	}
	return delay, nil
}

// invalidDelayPrefix starts the error ParseDelay returns (ParseDelayOf's words
// for the annotation), which then quotes the value.
var invalidDelayPrefix = "invalid " + limbov1alpha1.AnnotationDeletionDelay + " "

// InvalidDelayValue is the limbo.dev/deletionDelay value that msg names as
// invalid, when msg carries an error of ParseDelay (a Bundle's
// status.pendingDeletions entry for an object never deleted as it stands:
// `invalid limbo.dev/deletionDelay "forever": ...; never deleted until fixed`);
// ok is false for any other message. It lets a reader that sees only the
// entry (kubectl limbo pending) show the value the object carries.
func InvalidDelayValue(msg string) (value string, ok bool) {
	i := strings.Index(msg, invalidDelayPrefix)
	if i < 0 {
		return "", false
	}
	quoted, err := strconv.QuotedPrefix(msg[i+len(invalidDelayPrefix):])
	if err != nil {
		return "", false
	}
	value, err = strconv.Unquote(quoted)
	return value, err == nil
}

// FormatStamp formats t as a limbo.dev/deletionTimestamp value: RFC 3339 in
// UTC, truncated to the second, for example 2006-01-02T15:04:05Z.
func FormatStamp(t time.Time) string {
	return truncateStamp(t).Format(time.RFC3339)
}

// ExpediteStamp returns the limbo.dev/deletionTimestamp value that makes the
// deadline of an orphan with the given delay come now (at the latest): now -
// delay, formatted by FormatStamp. Decide at now then returns Delete.
func ExpediteStamp(now time.Time, delay time.Duration) string {
	return FormatStamp(now.Add(-delay))
}

// truncateStamp is t as a stamp holds it: UTC, to the second, without a
// monotonic clock reading.
func truncateStamp(t time.Time) time.Time {
	return t.UTC().Truncate(time.Second)
}
