// Package storageos is a small client for the StorageOS v2 REST API. It covers
// only what the namespace-gc plugin needs: logging in, listing namespaces,
// reading one and deleting one.
//
// # Wire format
//
// The API lives under the base path /v2 of the configured endpoint. The
// endpoint is used as given: the client adds no scheme and no port, so
// StorageOS's usual port 5705 must be part of it, for example
// http://storageos.kube-system:5705.
//
//   - POST /v2/auth/login with the JSON body {"username":"…","password":"…"}.
//     On 200 the JWT is in the Authorization response header. The header
//     normally reads "Bearer <jwt>", but the client also accepts a bare
//     token. If the header is missing, the client falls back to the token in
//     the UserSession body (session.token). Authorization-Expires-Seconds
//     gives the session lifetime. The client does not need it, because a 401
//     makes it log in again.
//   - GET /v2/namespaces returns a JSON array of Namespace objects:
//     {"id","name","labels","createdAt","updatedAt","version"}.
//   - GET /v2/namespaces/{id} returns one Namespace; 404 {"error":"not found"}.
//   - DELETE /v2/namespaces/{id}?version=<version> (version is required by
//     the API, also with ignore-version=true, which this client never sends:
//     a namespace known by its id alone is read first). 200 means deleted,
//     404 {"error":"not found"}, 409 {"error":"in use"} (the namespace still
//     holds volumes; the server enforces "only if empty"), and 412 means a
//     stale version; so does a 409 whose error says the version is stale,
//     which the API's document names for it as well.
//   - Every other call sends "Authorization: Bearer <jwt>".
//   - Error bodies are {"error":"<short description>"}.
//
// # Errors
//
// Every non-2xx response becomes an *APIError that carries the operation, the
// status code and the message from the error body. Use errors.As to get it.
// Status codes with a meaning for callers also match a sentinel through
// errors.Is:
//
//	404 (Delete/GetNamespace)          ErrNotFound           probably already gone; list again to be sure
//	other 409s (DeleteNamespace)       ErrNamespaceNotEmpty  the namespace still has volumes; retry later
//	412, 409 "stale" (DeleteNamespace) ErrStaleVersion       list again and retry with the new version
//	401 (after one re-login)           ErrUnauthorized
//	403                                ErrForbidden
//
// Transport failures and timeouts are returned wrapped; errors.Is(err,
// context.DeadlineExceeded) reports a timeout.
//
// # Authentication, retries and timeouts
//
// The client logs in lazily, on the first call. A call that gets 401 logs in
// again once and retries once. Concurrent calls that hit the same expired token
// share a single re-login. Each public method runs under
// context.WithTimeout(ctx, Config.Timeout), 10s by default. That budget covers
// any re-login and the retry.
//
// # Metrics
//
// With Config.Metrics set, every HTTP request is recorded, including login
// requests and retries. There are two series:
// limbo_storageos_request_duration_seconds{operation,code} and
// limbo_storageos_requests_total{operation,code}. The operation is "login",
// "list_namespaces", "get_namespace" or "delete_namespace". The code is the HTTP status code,
// or "timeout", "canceled" or "error" when no response arrived.
package storageos
