package storageos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/limbo-dev/limbo/pkg/refusedlogin"
	"github.com/limbo-dev/limbo/pkg/responselimit"
	"k8s.io/utils/clock"
)

// DefaultTimeout is the per-call timeout used when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Operation names. They are used as the "operation" metric label and in
// APIError.Operation.
const (
	OpLogin           = "login"
	OpListNamespaces  = "list_namespaces"
	OpGetNamespace    = "get_namespace"
	OpDeleteNamespace = "delete_namespace"
)

const (
	basePath = "/v2"

	// maxDrain caps how much unread body is discarded before closing, so
	// the connection can be reused.
	maxDrain = 64 << 10

	userAgent = "limbo-storageos-client"
)

// Config configures a Client.
type Config struct {
	// Endpoint is the API base URL, for example
	// http://storageos.kube-system:5705. It is used as given: the scheme
	// (http or https) is required, and the client adds no default port. Any
	// path is kept as a prefix in front of /v2.
	Endpoint string
	// Username and Password are the API credentials. Both are required.
	Username string
	Password string
	// HTTPClient sends the requests (a copy whose transport bounds every
	// answer: responselimit). Nil means a new client on
	// http.DefaultTransport. Timeouts come from contexts, so its Timeout
	// field may be left zero.
	HTTPClient *http.Client
	// Timeout bounds each public call, including any re-login and retry.
	// Zero means DefaultTimeout; negative values are rejected.
	Timeout time.Duration
	// Metrics, if not nil, records every HTTP request.
	Metrics *Metrics
	// Clock tells the time of a refused login (refusedlogin.Retry); nil: the real
	// clock.
	Clock clock.PassiveClock
}

// Namespace is a StorageOS namespace as returned by GET /v2/namespaces.
type Namespace struct {
	// ID is the opaque, unique namespace identifier. Use it for DELETE.
	ID string `json:"id"`
	// Name is the namespace name. It matches the Kubernetes Namespace name.
	Name string `json:"name"`
	// Labels are arbitrary key/value labels.
	Labels map[string]string `json:"labels,omitempty"`
	// CreatedAt and UpdatedAt are informational RFC 3339 timestamps.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// Version is the opaque version token (fewer than 30 characters). Send it
	// back unchanged in DeleteNamespace for optimistic concurrency.
	Version string `json:"version"`
}

// Client is a StorageOS v2 API client. It is safe for concurrent use.
type Client struct {
	base     *url.URL
	username string
	password string
	hc       *http.Client
	timeout  time.Duration
	metrics  *Metrics

	// refused remembers StorageOS's refusal of the credentials (401 to a
	// login), which answers the logins of the next refusedlogin.Retry.
	refused refusedlogin.Memory

	mu    sync.Mutex
	token string // bare JWT, without "Bearer "

	// loginSem serialises logins (capacity 1), so that concurrent calls
	// hitting the same expired token share one re-login.
	loginSem chan struct{}
}

// New validates cfg and returns a client. It does not contact the server.
func New(cfg Config) (*Client, error) {
	base, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Username == "" {
		return nil, errors.New("storageos: username is required")
	}
	if cfg.Password == "" {
		return nil, errors.New("storageos: password is required")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("storageos: timeout must not be negative, got %s", cfg.Timeout)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	// Every answer read bounded: the endpoint is whatever the Bundle's author
	// wrote (responselimit).
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if cfg.Clock != nil {
		clk = cfg.Clock
	}
	hc.Transport = responselimit.Transport(hc.Transport)
	hc.CheckRedirect = responselimit.RefuseRedirects
	return &Client{
		base:     base,
		username: cfg.Username,
		password: cfg.Password,
		hc:       hc,
		timeout:  timeout,
		metrics:  cfg.Metrics,
		refused:  refusedlogin.Memory{Now: clk.Now},
		loginSem: make(chan struct{}, 1),
	}, nil
}

// CheckEndpoint refuses an endpoint NewClient would refuse, so that a plugin can
// call it a spec error before it has credentials to build a client with.
func CheckEndpoint(endpoint string) error {
	_, err := parseEndpoint(endpoint)
	return err
}

func parseEndpoint(endpoint string) (*url.URL, error) {
	if strings.TrimSpace(endpoint) == "" {
		return nil, errors.New("storageos: endpoint is required")
	}
	// The scheme first: without one, Go's URL parser either takes the host for a
	// scheme (storageos:5705) or fails with words of its own ("first path segment
	// in URL cannot contain colon" for 127.0.0.1:5705), neither of which says what
	// is missing.
	if lower := strings.ToLower(endpoint); !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: must start with http:// or https:// (for example http://storageos:5705)", endpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: %w", endpoint, err)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: missing host", endpoint)
	}
	if u.User != nil {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: credentials must not be part of the URL", endpoint)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: query and fragment are not allowed", endpoint)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("storageos: invalid endpoint %q: bad port %q", endpoint, p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: empty port", endpoint)
	}
	prefix := strings.TrimRight(u.EscapedPath(), "/")
	u.Path, err = url.PathUnescape(prefix)
	if err != nil {
		return nil, fmt.Errorf("storageos: invalid endpoint %q: %w", endpoint, err)
	}
	u.RawPath = prefix
	return u, nil
}

// Endpoint returns the normalised endpoint URL.
func (c *Client) Endpoint() string { return c.base.String() }

// ListNamespaces returns all namespaces (GET /v2/namespaces).
func (c *Client) ListNamespaces(ctx context.Context) ([]Namespace, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.authed(ctx, OpListNamespaces, http.MethodGet, "/namespaces", nil)
	if err != nil {
		return nil, err
	}
	if !success(resp.status) {
		return nil, newAPIError(OpListNamespaces, resp)
	}
	var nss []Namespace
	if err := json.Unmarshal(resp.body, &nss); err != nil {
		return nil, fmt.Errorf("storageos: %s: decoding response: %w", OpListNamespaces, err)
	}
	if nss == nil {
		nss = []Namespace{}
	}
	return nss, nil
}

// DeleteNamespace deletes a namespace with DELETE
// /v2/namespaces/{id}?version=<version>. id and version come from
// ListNamespaces. A nil error means the server deleted it. Errors match
// ErrNotFound (probably already gone: list again to be sure),
// ErrNamespaceNotEmpty (it still holds volumes), ErrStaleVersion (list
// again), ErrUnauthorized, or otherwise an *APIError or a transport error.
func (c *Client) DeleteNamespace(ctx context.Context, id, version string) error {
	if version == "" {
		return fmt.Errorf("storageos: %s: empty version for namespace %q", OpDeleteNamespace, id)
	}
	if id == "" {
		return fmt.Errorf("storageos: %s: empty namespace id", OpDeleteNamespace)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	q := url.Values{"version": {version}}
	resp, err := c.authed(ctx, OpDeleteNamespace, http.MethodDelete, "/namespaces/"+url.PathEscape(id)+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if !success(resp.status) {
		return newAPIError(OpDeleteNamespace, resp)
	}
	return nil
}

// GetNamespace reads the namespace id (GET /v2/namespaces/{id}). Errors match
// ErrNotFound (an id not known to the server — or a 404 that is not
// StorageOS's: a caller that needs proof of a deletion lists again),
// ErrUnauthorized, or otherwise an *APIError or a transport error.
func (c *Client) GetNamespace(ctx context.Context, id string) (*Namespace, error) {
	if id == "" {
		return nil, fmt.Errorf("storageos: %s: empty namespace id", OpGetNamespace)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.authed(ctx, OpGetNamespace, http.MethodGet, "/namespaces/"+url.PathEscape(id), nil)
	if err != nil {
		return nil, err
	}
	if !success(resp.status) {
		return nil, newAPIError(OpGetNamespace, resp)
	}
	var ns Namespace
	if err := json.Unmarshal(resp.body, &ns); err != nil {
		return nil, fmt.Errorf("storageos: %s: decoding response: %w", OpGetNamespace, err)
	}
	if ns.ID != id || ns.Version == "" {
		// A 200 that is not the namespace asked for (a proxy's page that
		// happens to be JSON) is no answer.
		return nil, fmt.Errorf("storageos: %s: the answer is not namespace %q (id %q, version %q)", OpGetNamespace, id, ns.ID, ns.Version)
	}
	return &ns, nil
}

func success(status int) bool { return status >= 200 && status < 300 }

// response is a fully read (size-limited) and closed HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

// authed sends an authenticated request. If it gets 401, it logs in again
// once and retries once. A 401 on the retry becomes an error matching
// ErrUnauthorized. Any other status is returned for the caller to map.
func (c *Client) authed(ctx context.Context, op, method, pathAndQuery string, body []byte) (*response, error) {
	token, err := c.currentOrLogin(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.roundTrip(ctx, op, method, pathAndQuery, body, token)
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusUnauthorized {
		return resp, nil
	}
	token, err = c.relogin(ctx, token)
	if err != nil {
		return nil, err
	}
	resp, err = c.roundTrip(ctx, op, method, pathAndQuery, body, token)
	if err != nil {
		return nil, err
	}
	if resp.status == http.StatusUnauthorized {
		return nil, newAPIError(op, resp) // matches ErrUnauthorized
	}
	return resp, nil
}

func (c *Client) currentToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// currentOrLogin returns the stored token, logging in first if there is none.
func (c *Client) currentOrLogin(ctx context.Context) (string, error) {
	if t := c.currentToken(); t != "" {
		return t, nil
	}
	return c.relogin(ctx, "")
}

// relogin logs in again unless another goroutine has already replaced stale
// while this one waited, in which case it returns the newer token.
func (c *Client) relogin(ctx context.Context, stale string) (string, error) {
	if err := c.acquireLogin(ctx); err != nil {
		return "", fmt.Errorf("storageos: %s: %w", OpLogin, err)
	}
	defer c.releaseLogin()
	if t := c.currentToken(); t != "" && t != stale {
		return t, nil
	}
	return c.loginLocked(ctx)
}

func (c *Client) acquireLogin(ctx context.Context) error {
	select {
	case c.loginSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) releaseLogin() { <-c.loginSem }

// loginLocked performs POST /v2/auth/login, unless StorageOS refused the
// credentials less than refusedlogin.Retry ago: then that refusal is the answer. The
// caller holds loginSem.
func (c *Client) loginLocked(ctx context.Context) (string, error) {
	if err := c.refused.Recent(); err != nil {
		return "", err
	}
	body, err := json.Marshal(struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}{c.username, c.password})
	if err != nil {
		return "", fmt.Errorf("storageos: %s: encoding request: %w", OpLogin, err)
	}
	resp, err := c.roundTrip(ctx, OpLogin, http.MethodPost, "/auth/login", body, "")
	if err != nil {
		return "", err
	}
	if !success(resp.status) {
		err := newAPIError(OpLogin, resp)
		if resp.status == http.StatusUnauthorized {
			c.refused.Remember(err)
		}
		return "", err
	}
	token := tokenFromHeader(resp.header.Get("Authorization"))
	if token == "" {
		token = tokenFromBody(resp.body)
	}
	if token == "" {
		return "", ErrNoAuthToken
	}
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
	return token, nil
}

// tokenFromHeader returns the JWT from an Authorization response header,
// which may read "Bearer <jwt>" or just "<jwt>".
func tokenFromHeader(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 7 && strings.EqualFold(v[:7], "bearer ") {
		v = strings.TrimSpace(v[7:])
	}
	if strings.ContainsAny(v, " \t") {
		return "" // not a token
	}
	return v
}

// tokenFromBody reads session.token from a UserSession body.
func tokenFromBody(b []byte) string {
	var us struct {
		Session struct {
			Token string `json:"token"`
		} `json:"session"`
	}
	if json.Unmarshal(b, &us) != nil {
		return ""
	}
	return tokenFromHeader(us.Session.Token)
}

// roundTrip sends one request, reads the body (bounded by the transport),
// closes it, and records metrics. If token is not empty it is sent as
// "Authorization: Bearer <token>".
func (c *Client) roundTrip(ctx context.Context, op, method, pathAndQuery string, body []byte, token string) (*response, error) {
	// pathAndQuery is already escaped.
	target := c.base.Scheme + "://" + c.base.Host + c.base.EscapedPath() + basePath + pathAndQuery

	var rdr io.Reader
	if body != nil {
		rdr = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rdr)
	if err != nil {
		return nil, fmt.Errorf("storageos: %s: building request: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}

	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.metrics.observe(op, errorCode(ctx, err), time.Since(start))
		return nil, wrapTransport(ctx, op, err)
	}
	if resp == nil { // defensive: a RoundTripper must not do this
		c.metrics.observe(op, "error", time.Since(start))
		return nil, fmt.Errorf("storageos: %s: no response", op)
	}
	data, rerr := io.ReadAll(resp.Body) // bounded by hc's transport
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	if rerr != nil && success(resp.StatusCode) {
		c.metrics.observe(op, errorCode(ctx, rerr), time.Since(start))
		return nil, wrapTransport(ctx, op, fmt.Errorf("reading response body: %w", rerr))
	}
	// An unreadable error body still leaves the status code, which is what
	// matters; the message falls back to the status text.
	c.metrics.observe(op, strconv.Itoa(resp.StatusCode), time.Since(start))
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// wrapTransport wraps a transport error so that errors.Is still reports
// context.DeadlineExceeded or context.Canceled when the call's context ended.
func wrapTransport(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("storageos: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("storageos: %s: %w", op, err)
}

// errorCode is the metric "code" label for a request that got no usable
// response.
func errorCode(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return "error"
	}
}
