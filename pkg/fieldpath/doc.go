// Package fieldpath reads the field paths users write in limbo's API — a Bundle
// reference's path and a CRD's limbo.dev/readyWhenFieldPath annotation — the way
// kubectl reads a JSONPath: status.phase, .status.phase, {.status.phase} and
// $.status.phase all name the same field. Normalize is the one place that
// decides what is accepted; docs/bundle-api.md ("Field paths") documents it.
//
// A path that starts with a recursive descent (..phase, $..phase) is rejected
// rather than tolerated: it would find a field of that name anywhere in the
// object, not the one the user meant.
package fieldpath
