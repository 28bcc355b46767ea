// Package responselimit bounds what limbo reads from HTTP endpoints that a
// Bundle's author names: namespace-gc's StorageOS endpoint, route-gc's Keystone
// (and the Nova and Neutron endpoints its catalog lists) and deorbit's target
// cluster. Anyone who may write a Bundle can point these at a server of their
// own, and the clients limbo uses for them (gophercloud, client-go) read a
// response body whole: a server that answered without end filled the
// controller's memory until it was killed, and again after every restart, for
// every tenant at once.
//
// Transport wraps a client's round tripper so that every response body read
// through it is bounded: MaxBody for an answer, MaxErrorBody for an error status
// (only its message is read), and, when the request's context carries one
// (WithBudget), the budget that all the responses of one plugin call share —
// a server's endless pages stop there. A body past its bound fails its read with
// an error that wraps ErrTooLarge; what was read before it is still returned.
//
// RefuseRedirects is those clients' CheckRedirect: a redirect is an error, not
// followed (a write re-sent as a GET, and its token, to wherever it points).
package responselimit
