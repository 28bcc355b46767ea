// Package reference resolves the references of a Bundle resource to values and
// substitutes those values for the !{name} markers of the resource's object.
//
// # References
//
// A resource declares references to other resources of its Bundle:
//
//	references:
//	- name: dbhost
//	  resource: db-config
//	  path: data.host
//	  example: db.example.com
//
// A reference without a name only orders the resources (see package graph) and
// is skipped here. A named reference reads one value from the live object of the
// referenced resource: Path is a field path as package fieldpath reads it, such
// as data.host (or .data.host, {.data.host}), status.conditions[0].type or
// spec.ports[?(@.name=="http")].port, with missing keys reported as errors, and
// it must yield exactly one value: none, or more than one, is an error. The path is
// parsed even when the object is not available, so that a malformed path is
// reported when the Bundle is validated. The value
// keeps its JSON type: string, int64, float64, bool, nil, map[string]interface{}
// or []interface{}, as in unstructured content.
//
// Because missing keys are errors, a filter such as [?(@.name=="http")] fails
// with "name is not found" if an element of the list has no name; that is how
// client-go's JSONPath behaves.
//
// # Examples and availability
//
// Before the referenced object exists its values cannot be read, yet the
// referencing resource should be validated early. When Resolve is asked to use
// examples, a reference whose source object is not available takes its Example
// instead, decoded as unstructured content is (integers become int64). A
// reference that has neither yields an error that wraps ErrNotAvailable, so that
// callers can tell "wait for the dependency" from a broken reference. A path into
// the source's status that finds nothing yields an error that wraps
// ErrStatusNotSet: a controller writes its object's status over time, so callers
// wait for such a value as for a dependency.
//
// # Substitution
//
// Substitute replaces markers in the string values of an object, at any depth of
// maps and lists; map keys are left alone. A string that is exactly !{name} is
// replaced by the value itself, keeping its type, so that
//
//	replicas: "!{count}"
//
// becomes an integer. A marker inside a longer string is interpolated as text:
// a string as it is, anything else as compact JSON (a number, true, null,
// {"a":1}). A marker naming no declared reference is an error, and Markers lists
// the names an object uses so that validation can report undeclared ones before
// any value is resolved.
//
// What Substitute puts into one object is bounded: past MaxSubstitutedBytes of
// values (a whole value counted by its JSON size, an interpolated one by its
// text's length) it stops with an error wrapping ErrTooLarge, before the object
// is built, so that one value used by many markers cannot make an object of
// gigabytes.
//
// # Secrets
//
// A value read from a Secret (apiVersion v1, kind Secret) may only be injected
// into a Secret, so that a Bundle cannot copy a secret into, say, a ConfigMap or
// an environment variable in a Deployment's spec. The values of a Secret's data
// are base64 in the live object and are injected as they are, still encoded: that
// is right for the data of the target Secret, but they must not be injected into
// its stringData, which would encode them twice.
//
// The error of a path that cannot be evaluated on a Secret says what failed
// (a filter or an index that meets no list, a missing key) without the Secret's
// values, which client-go's JSONPath would print: the error is written to the
// Bundle's status and events, which more people read than the Secret. Other
// such errors are cut to a bounded length, as the value printed may be large.
package reference
