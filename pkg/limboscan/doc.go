// Package limboscan finds what is in limbo across kinds: it discovers every
// namespaced kind that can hold objects in limbo (Kinds) and lists the objects of
// a kind labelled limbo.dev/pending-deletion=true, metadata only (List), so that a
// Secret's data is never read. Holds tells whether a kind has any object a label
// selector selects (the Bundle controller, at start, finds the kinds that hold
// objects of its Bundles this way).
//
// The controller's reaper and `kubectl limbo pending` both scan this way; they
// differ only in the verbs they need (the reaper also patches and deletes) and in
// what they do with an error.
package limboscan
