package it

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
)

// requestRefusal makes the API server refuse the in-process controller's
// requests that match, until lift: an interceptor sends them as a user without
// any permission (Impersonate-User), and the API server answers 403 Forbidden —
// the real API server's refusal, not a made-up response. It records when each
// refused request was sent, and its body.
type requestRefusal struct {
	mu      sync.Mutex
	lifted  bool
	refused []refusedRequest
}

type refusedRequest struct {
	at   time.Time
	body string
}

// refuseRequests refuses the controller's requests that match until lift.
func refuseRequests(t *testing.T, match func(*http.Request) bool) *requestRefusal {
	t.Helper()
	r := &requestRefusal{}
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		r.mu.Lock()
		lifted := r.lifted
		r.mu.Unlock()
		if lifted || !match(req) {
			return send(req)
		}
		var body []byte
		if req.Body != nil {
			var err error
			if body, err = io.ReadAll(req.Body); err != nil {
				return nil, err
			}
		}
		noAccess := req.Clone(req.Context())
		noAccess.Body = io.NopCloser(bytes.NewReader(body))
		noAccess.Header.Set("Impersonate-User", "limbo-test-no-access")
		resp, err := send(noAccess)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.mu.Lock()
			r.refused = append(r.refused, refusedRequest{at: time.Now(), body: string(body)})
			r.mu.Unlock()
		}
		return resp, err
	})
	return r
}

// waitRefused waits until done holds for the bodies of the requests refused so
// far; what says what it waits for.
func (r *requestRefusal) waitRefused(t *testing.T, what string, done func(bodies []string) bool) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		r.mu.Lock()
		bodies := make([]string, 0, len(r.refused))
		for _, req := range r.refused {
			bodies = append(bodies, req.body)
		}
		r.mu.Unlock()
		if done(bodies) {
			return nil
		}
		return fmt.Errorf("the API server refused %d requests; waiting for %s", len(bodies), what)
	})
}

// first is the time of the first refusal.
func (r *requestRefusal) first() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.refused) == 0 {
		return time.Time{}
	}
	return r.refused[0].at
}

// lift lets the requests through again.
func (r *requestRefusal) lift() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lifted = true
}
