// Package reaper runs the soft-delete engine for objects that no Bundle controls any
// more but that are still in limbo: objects a Bundle's teardown released with their
// deletion delay, and objects released to another Bundle that declares them to
// adopt them (limbo.dev/adopt), which it holds while one does. It finds them across
// kinds by the limbo.dev/pending-deletion label and deletes each at its deadline,
// to the second.
package reaper
