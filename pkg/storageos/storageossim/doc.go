// Package storageossim is an in-memory simulator of the parts of the
// StorageOS v2 REST API that limbo uses. It speaks the real paths, status
// codes, headers and JSON shapes:
//
//	POST   /v2/auth/login              {"username","password"} → 200 UserSession,
//	                                   "Authorization: Bearer <jwt>",
//	                                   "Authorization-Expires-Seconds: <n>";
//	                                   400 malformed body; 401 bad credentials
//	POST   /v2/auth/refresh            (bearer) → 200 UserSession with a new Authorization header
//	GET    /v2/namespaces              → 200 [Namespace…]
//	POST   /v2/namespaces              {"name","labels"} → 201 Namespace; 409 already exists
//	GET    /v2/namespaces/{id}         → 200 Namespace; 404
//	DELETE /v2/namespaces/{id}?version=<v>[&ignore-version=true]
//	                                   → 200; 400 version missing (also with
//	                                     ignore-version); 404 unknown id;
//	                                     412 stale version (409 with Config.StaleVersionConflict);
//	                                     409 {"error":"in use"} while it holds volumes
//
// Every call except login returns 401 {"error":"authentication required"}
// without a valid "Authorization: Bearer <jwt>" header. The bare token is
// accepted as well. Every error body is {"error":"<short description>"}.
//
// Use a Server as an http.Handler (httptest.NewServer(sim)), or call Start to
// listen on an address. Test controls (AddNamespace, SetVolumes,
// ExpireTokens, SetOutage, Block, Calls, …) are safe for concurrent use with
// request handling.
package storageossim
