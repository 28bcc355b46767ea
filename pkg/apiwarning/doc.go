// Package apiwarning handles the warnings the API server sends with its answers
// (RFC 7234 Warning headers, code 299): a deprecated API, a Pod that the
// namespace's PodSecurity warn level would refuse.
//
// Whom a warning concerns depends on the request. A Bundle's apply: the
// Bundle's author, who would have seen it from kubectl, so the pass collects it
// (Collect) for an event on the Bundle. A scan that lists every kind to look
// for limbo's objects (Quiet): nobody — it reads kinds no Bundle may use, and
// logging their deprecations would repeat them at every start and resync. The
// rest (informers, limbo's own writes): the operator, in the log, once per
// warning text (an informer of a deprecated kind is warned at every list and
// watch).
package apiwarning
