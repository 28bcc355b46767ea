package storageos

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// Sentinel errors. An *APIError unwraps to at most one of them, so
// errors.Is(err, ErrNotFound) and similar work on any error this package
// returns.
var (
	// ErrNotFound: DeleteNamespace or GetNamespace got 404. The namespace is probably already
	// gone; a 404 that is not StorageOS's (a proxy's, a route this StorageOS
	// version lacks) looks the same, so a caller confirms by listing again.
	ErrNotFound = errors.New("storageos: not found")

	// ErrNamespaceNotEmpty: DeleteNamespace got 409 {"error":"in use"}. The
	// namespace still holds volumes. Retry later with backoff.
	ErrNamespaceNotEmpty = errors.New("storageos: namespace still has volumes")

	// ErrStaleVersion: DeleteNamespace got 412. The namespace changed after its
	// version was read. List again and retry with the new version.
	ErrStaleVersion = errors.New("storageos: stale version")

	// ErrUnauthorized: the credentials were rejected (401 on login), or a call
	// was still rejected with 401 after one re-login and one retry.
	ErrUnauthorized = errors.New("storageos: unauthorized")

	// ErrForbidden: the authenticated user may not perform the call (403).
	ErrForbidden = errors.New("storageos: forbidden")

	// ErrNoAuthToken: a login returned 200 with no token, neither in the
	// Authorization header nor in the body.
	ErrNoAuthToken = errors.New("storageos: login response carried no token")
)

// APIError is a non-2xx response from the StorageOS API.
type APIError struct {
	// Operation is the client operation: "login", "list_namespaces" or
	// "delete_namespace".
	Operation string
	// StatusCode is the HTTP status code.
	StatusCode int
	// Message is the "error" field of the JSON error body
	// ({"error":"<short description>"}). If the body was not in that shape,
	// it is the trimmed, truncated body text, or else the status text.
	Message string

	kind error // sentinel matched by errors.Is, or nil
}

// Error implements error.
func (e *APIError) Error() string {
	s := fmt.Sprintf("storageos: %s: HTTP %d", e.Operation, e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the sentinel error for the status code (ErrNotFound,
// ErrNamespaceNotEmpty, ErrStaleVersion, ErrUnauthorized, ErrForbidden), or
// nil.
func (e *APIError) Unwrap() error { return e.kind }

// maxMessageLen caps the length of APIError.Message taken from a body that is
// not JSON.
const maxMessageLen = 512

// newAPIError builds the error for a non-2xx response to operation op.
func newAPIError(op string, resp *response) *APIError {
	status := resp.status
	e := &APIError{Operation: op, StatusCode: status, Message: errorMessage(status, resp.body)}
	if status >= 300 && status < 400 {
		e.Message = responselimit.RedirectMessage(resp.header)
	}
	switch status {
	case http.StatusNotFound:
		// 404 means "not there" only for a namespace's own path. To a login
		// or a listing it means a wrong endpoint (or a proxy's page), which no
		// caller may take for success.
		if op == OpDeleteNamespace || op == OpGetNamespace {
			e.kind = ErrNotFound
		}
	case http.StatusUnauthorized:
		e.kind = ErrUnauthorized
	case http.StatusForbidden:
		e.kind = ErrForbidden
	case http.StatusConflict:
		// 409 means "in use" only for a namespace delete. Elsewhere in the
		// API it means "already exists".
		if op == OpDeleteNamespace {
			e.kind = ErrNamespaceNotEmpty
		}
	case http.StatusPreconditionFailed:
		e.kind = ErrStaleVersion
	}
	return e
}

// errorMessage pulls the message out of a StorageOS error body.
func errorMessage(status int, body []byte) string {
	var eb struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &eb); err == nil && eb.Error != "" {
		return truncate(eb.Error)
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		return truncate(s)
	}
	return http.StatusText(status)
}

// truncate cuts s to maxMessageLen bytes and the "…" that says so.
func truncate(s string) string { return boundedtext.Cut(s, maxMessageLen+len("…")) }
