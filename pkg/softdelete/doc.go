// Package softdelete is the soft-delete engine: it decides when an object or an
// external item that is no longer desired (an orphan) is deleted, and applies
// those decisions.
//
// Its core is the state machine in statemachine.go, the one place that decides
// when something is deleted (DESIGN.md §4). Decide is pure: given the current
// time and what it reads of an item (whether it is desired, its annotations and
// whether it carries the limbo.dev/pending-deletion label) it returns a
// Decision, and it never reads a clock, the API server or anything else. The
// parts of the engine that apply decisions — writing the stamp and the label,
// deleting with UID and resourceVersion preconditions on a fresh read,
// requeueing — build on it and hold no deletion logic of their own.
//
// The countdown of an orphan is recorded on the item itself, so it survives
// restarts of the controller:
//
//   - limbo.dev/deletionDelay is the Go duration (≥ 0) the orphan waits in limbo;
//     without it the orphan is deleted at once, and with an invalid value it is
//     never deleted.
//   - limbo.dev/deletionTimestamp is the RFC 3339 UTC time, to the second, at
//     which the countdown started; the orphan is deleted at stamp + delay.
//
// An item that becomes desired again during its countdown is taken out of limbo:
// its stamp and label are removed.
package softdelete
