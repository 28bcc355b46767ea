package testenv

import (
	"net/http"
	"sync"
	"testing"
)

// Interceptor sees every request of the in-process controller before it goes to
// the API server: it sends it on with send (changed or not, after doing
// something of its own) or answers it itself. Interceptors run on the
// controller's goroutines: they must not call t.Fatal.
type Interceptor func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error)

// interceptors holds the interceptors of the running tests; the controller's
// rest.Config is wrapped with it.
type interceptors struct {
	mu   sync.Mutex
	next int
	set  map[int]Interceptor
}

func (s *interceptors) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		s.mu.Lock()
		chain := make([]Interceptor, 0, len(s.set))
		for i := 0; i < s.next; i++ {
			if ic, ok := s.set[i]; ok {
				chain = append(chain, ic)
			}
		}
		s.mu.Unlock()
		return sendThrough(chain, rt, req)
	})
}

// sendThrough passes req through the chain, oldest interceptor first, and then
// to rt.
func sendThrough(chain []Interceptor, rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	if len(chain) == 0 {
		return rt.RoundTrip(req)
	}
	return chain[0](req, func(r *http.Request) (*http.Response, error) { return sendThrough(chain[1:], rt, r) })
}

// InterceptController puts ic in the path of every request the in-process
// controller sends, until t ends: a test makes a change land at an exact point
// of the controller's work (between its read of an object and its delete), or
// makes one of its reads fail. Interceptors of tests that run in parallel see
// each other's requests too: each must act on its own objects only.
func (e *Env) InterceptController(t testing.TB, ic Interceptor) {
	t.Helper()
	e.intercepts.mu.Lock()
	if e.intercepts.set == nil {
		e.intercepts.set = map[int]Interceptor{}
	}
	id := e.intercepts.next
	e.intercepts.next++
	e.intercepts.set[id] = ic
	e.intercepts.mu.Unlock()
	t.Cleanup(func() {
		e.intercepts.mu.Lock()
		defer e.intercepts.mu.Unlock()
		delete(e.intercepts.set, id)
	})
}
