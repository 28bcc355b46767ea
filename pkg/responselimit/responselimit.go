package responselimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

const (
	// MaxBody bounds the body of one answer (a status below 400): the largest
	// page of a listing limbo asks for is a few MiB (a thousand Nova servers; a
	// target cluster's PersistentVolumes), so this leaves room twenty times over.
	MaxBody = 64 << 20
	// MaxErrorBody bounds the body of an error status: the clients keep it as
	// the error's message.
	MaxErrorBody = 64 << 10
	// CallBudget is the budget plugin calls get (WithBudget): twice MaxBody,
	// for the pages and the discovery that one pass reads.
	CallBudget = 2 * MaxBody
)

// ErrTooLarge is wrapped by the error of a read past a bound.
var ErrTooLarge = errors.New("response body too large")

// Transport bounds the bodies of next's responses (see the package doc).
func Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{next: next}
}

type transport struct{ next http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	limit, what := int64(MaxBody), "an answer"
	if resp.StatusCode >= http.StatusBadRequest {
		limit, what = MaxErrorBody, "an error answer"
	}
	resp.Body = &body{ReadCloser: resp.Body, left: limit,
		tooLong: fmt.Errorf("%w: %s of %s %s is longer than %s, the most limbo reads", ErrTooLarge, what, req.Method, redacted(req), size(limit)),
		budget:  budgetOf(req.Context())}
	return resp, nil
}

// CloseIdleConnections, called by http.Client's, reaches the transport under.
func (t *transport) CloseIdleConnections() { utilnet.CloseIdleConnectionsFor(t.next) }

// WrappedRoundTripper lets client-go's helpers see the transport under it.
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// body is a response body that fails past its limit or its call's budget.
type body struct {
	io.ReadCloser
	left    int64 // bytes this body may still read
	tooLong error
	budget  *budget // nil: none
	err     error   // once failed, every read fails
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// One byte past the limit tells a body of exactly the limit from a longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.err = b.tooLong
	}
	b.left -= int64(n)
	if b.budget != nil && b.err == nil {
		if left := b.budget.left.Add(-int64(n)); left < 0 {
			n += int(left) // what was within the budget
			if n < 0 {
				n = 0
			}
			b.err = fmt.Errorf("%w: the answers of one plugin call are longer than %s, the most limbo reads in one call", ErrTooLarge, size(b.budget.limit))
		}
	}
	if b.err != nil {
		return n, b.err
	}
	return n, err
}

// budget is what the responses of one call may still read, shared by them.
type budget struct {
	limit int64
	left  atomic.Int64
}

type budgetKey struct{}

// WithBudget gives the requests made with ctx (and contexts derived from it) a
// budget of n bytes of response bodies, all together.
func WithBudget(ctx context.Context, n int64) context.Context {
	b := &budget{limit: n}
	b.left.Store(n)
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// redacted is the request's URL without its query (which may carry a token) or
// user information.
func redacted(req *http.Request) string {
	if req.URL == nil {
		return ""
	}
	return redactedURL(*req.URL)
}

func redactedURL(u url.URL) string {
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// size is n bytes in words: "64 MiB", "64 KiB", "100 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// RefuseRedirects is the CheckRedirect of the clients of those endpoints: a
// redirect is not followed, and its answer (3xx) is the caller's, an error. Go's
// client sends a DELETE or PUT answered 301, 302 or 303 again as a GET, whose
// 200 a caller reads as the write's (a namespace or a route reported deleted
// that stays); and it forwards headers such as OpenStack's X-Auth-Token to
// wherever the redirect points, and a 307's body (credentials, at a login) with
// them.
func RefuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// RedirectMessage says what a redirect refused (RefuseRedirects) answered: where
// to, its credentials and query left out, so that the endpoint can be named as
// it is.
func RedirectMessage(header http.Header) string {
	to := "another location"
	if u, err := url.Parse(header.Get("Location")); err == nil && header.Get("Location") != "" {
		to = redactedURL(*u)
	}
	return "redirected to " + to + ": not followed; name the endpoint it redirects to"
}
