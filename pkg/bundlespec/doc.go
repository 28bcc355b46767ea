// Package bundlespec turns a Bundle's spec into a validated, ordered plan, or into
// the list of everything wrong with it, each error naming the offending resource.
//
// Validation is pure apart from the RESTMapper (is a kind namespaced?) and the
// plugin catalog (does a plugin exist, does its spec fit its schema). A Bundle that
// fails validation is Stalled: the reconciler writes nothing and deletes nothing.
package bundlespec
