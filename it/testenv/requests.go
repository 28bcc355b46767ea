package testenv

import (
	"net/http"
	"strings"
	"sync"
)

// Request is one HTTP request the in-process controller sent to the API server.
type Request struct {
	Method string
	// Path is the URL path, such as /api/v1/namespaces/ns/configmaps/name.
	Path string
	// Accept is the representation asked for: a metadata-only read asks for
	// PartialObjectMetadata (as=PartialObjectMetadata).
	Accept string
	// Watch is set on a watch (a GET with watch=true).
	Watch bool
}

func (r Request) String() string { return r.Method + " " + r.Path }

// IsWrite reports whether the request changes something: POST, PUT, PATCH or DELETE.
func (r Request) IsWrite() bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// InNamespace reports whether the request addresses an object (or a collection)
// of namespace ns.
func (r Request) InNamespace(ns string) bool {
	return strings.Contains(r.Path+"/", "/namespaces/"+ns+"/")
}

// Resource is the resource (plural) the request addresses, such as configmaps or
// events; "" when the path names none.
func (r Request) Resource() string {
	parts := strings.Split(strings.Trim(r.Path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			return parts[i+2]
		}
	}
	return ""
}

// requestLog records the controller's requests; the controller's rest.Config is
// wrapped with it.
type requestLog struct {
	mu   sync.Mutex
	reqs []Request
	// watches are every watch since the start: informers start once per
	// controller, so a test that asks how they watch must not lose them to
	// another test's ResetControllerRequests.
	watches []Request
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		r := Request{Method: req.Method, Path: req.URL.Path, Accept: req.Header.Get("Accept"), Watch: req.URL.Query().Get("watch") == "true"}
		l.mu.Lock()
		l.reqs = append(l.reqs, r)
		if r.Watch {
			l.watches = append(l.watches, r)
		}
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// ControllerWatches returns every watch the in-process controller started since
// its first start (ResetControllerRequests keeps them), oldest first.
func (e *Env) ControllerWatches() []Request {
	e.requests.mu.Lock()
	defer e.requests.mu.Unlock()
	return append([]Request(nil), e.requests.watches...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// ControllerRequests returns the requests the in-process controller sent since
// the last ResetControllerRequests (or its start), oldest first, that keep
// passes; no filter keeps them all. Watches are requests too: a watch that the
// controller starts is recorded when it starts.
func (e *Env) ControllerRequests(keep ...func(Request) bool) []Request {
	e.requests.mu.Lock()
	defer e.requests.mu.Unlock()
	var out []Request
next:
	for _, r := range e.requests.reqs {
		for _, k := range keep {
			if !k(r) {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// ResetControllerRequests forgets the requests recorded so far.
func (e *Env) ResetControllerRequests() {
	e.requests.mu.Lock()
	defer e.requests.mu.Unlock()
	e.requests.reqs = nil
}

// Writes keeps the requests that change something.
func Writes(r Request) bool { return r.IsWrite() }

// Reads keeps the reads: GETs (a LIST included) that are no watch.
func Reads(r Request) bool { return r.Method == http.MethodGet && !r.Watch }

// NotPath keeps the requests to any other path than path.
func NotPath(path string) func(Request) bool {
	return func(r Request) bool { return r.Path != path }
}

// InNamespace keeps the requests addressed to namespace ns.
func InNamespace(ns string) func(Request) bool {
	return func(r Request) bool { return r.InNamespace(ns) }
}

// NotResource keeps the requests that do not address any of the resources.
func NotResource(resources ...string) func(Request) bool {
	return func(r Request) bool {
		for _, res := range resources {
			if r.Resource() == res {
				return false
			}
		}
		return true
	}
}

// FormatRequests lists requests one a line, for failure messages.
func FormatRequests(reqs []Request) string {
	if len(reqs) == 0 {
		return "(none)"
	}
	lines := make([]string, len(reqs))
	for i, r := range reqs {
		lines[i] = "  " + r.String()
	}
	return "\n" + strings.Join(lines, "\n")
}
