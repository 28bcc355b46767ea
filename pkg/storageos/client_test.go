package storageos_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/limbo-dev/limbo/pkg/refusedlogin"
	"github.com/limbo-dev/limbo/pkg/responselimit"
	"github.com/limbo-dev/limbo/pkg/storageos"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	user = "admin"
	pass = "s3cret"
)

// harness runs a simulator behind an httptest server and a client pointed at
// it.
type harness struct {
	sim     *storageossim.Server
	srv     *httptest.Server
	client  *storageos.Client
	metrics *storageos.Metrics
	reg     *prometheus.Registry
}

type harnessOpt func(*harnessOpts)

type harnessOpts struct {
	simCfg  storageossim.Config
	timeout time.Duration
	wrap    func(http.Handler) http.Handler
}

func withSimConfig(c storageossim.Config) harnessOpt {
	return func(o *harnessOpts) { o.simCfg = c }
}
func withTimeout(d time.Duration) harnessOpt { return func(o *harnessOpts) { o.timeout = d } }
func withWrap(f func(http.Handler) http.Handler) harnessOpt {
	return func(o *harnessOpts) { o.wrap = f }
}

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	o := harnessOpts{simCfg: storageossim.Config{Username: user, Password: pass}}
	for _, f := range opts {
		f(&o)
	}
	sim := storageossim.New(o.simCfg)
	var h http.Handler = sim
	if o.wrap != nil {
		h = o.wrap(sim)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	m := storageos.NewMetrics(reg)
	c, err := storageos.New(storageos.Config{
		Endpoint:   srv.URL,
		Username:   user,
		Password:   pass,
		HTTPClient: srv.Client(),
		Timeout:    o.timeout,
		Metrics:    m,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{sim: sim, srv: srv, client: c, metrics: m, reg: reg}
}

func (h *harness) wantCalls(t *testing.T, want map[string]int) {
	t.Helper()
	for op, n := range want {
		if got := h.sim.Calls(op); got != n {
			t.Errorf("sim.Calls(%q) = %d, want %d", op, got, n)
		}
	}
}

// logIn has the client log in before a test's own calls, through the lazy
// login of a first ListNamespaces (the client has no other way to log in).
func (h *harness) logIn(t *testing.T) {
	t.Helper()
	if _, err := h.client.ListNamespaces(context.Background()); err != nil {
		t.Fatalf("logging in with ListNamespaces: %v", err)
	}
}

func (h *harness) requests(op, code string) float64 {
	return testutil.ToFloat64(h.metrics.RequestsTotal.WithLabelValues(op, code))
}

func TestNewValidatesConfig(t *testing.T) {
	good := storageos.Config{Endpoint: "http://storageos.kube-system:5705", Username: "u", Password: "p"}
	tests := []struct {
		name    string
		mutate  func(*storageos.Config)
		wantErr string
	}{
		{"valid http", func(*storageos.Config) {}, ""},
		{"valid https with path prefix", func(c *storageos.Config) { c.Endpoint = "https://api.example.com/storageos/" }, ""},
		{"valid ipv6", func(c *storageos.Config) { c.Endpoint = "http://[::1]:5705" }, ""},
		{"empty endpoint", func(c *storageos.Config) { c.Endpoint = "" }, "endpoint is required"},
		{"no scheme", func(c *storageos.Config) { c.Endpoint = "storageos:5705" }, "must start with http:// or https://"},
		{"ip and port", func(c *storageos.Config) { c.Endpoint = "127.0.0.1:5705" }, "must start with http:// or https://"},
		{"host only", func(c *storageos.Config) { c.Endpoint = "storageos" }, "must start with http:// or https://"},
		{"bad scheme", func(c *storageos.Config) { c.Endpoint = "ftp://storageos:5705" }, "must start with http:// or https://"},
		{"upper-case scheme", func(c *storageos.Config) { c.Endpoint = "HTTP://storageos:5705" }, ""},
		{"missing host", func(c *storageos.Config) { c.Endpoint = "http://:5705" }, "missing host"},
		{"unparseable", func(c *storageos.Config) { c.Endpoint = "http://storageos:57x5" }, "invalid endpoint"},
		{"port out of range", func(c *storageos.Config) { c.Endpoint = "http://storageos:99999" }, "bad port"},
		{"empty port", func(c *storageos.Config) { c.Endpoint = "http://storageos:" }, "empty port"},
		{"userinfo", func(c *storageos.Config) { c.Endpoint = "http://u:p@storageos:5705" }, "credentials must not be part of the URL"},
		{"query", func(c *storageos.Config) { c.Endpoint = "http://storageos:5705?x=1" }, "query and fragment"},
		{"fragment", func(c *storageos.Config) { c.Endpoint = "http://storageos:5705#x" }, "query and fragment"},
		{"missing username", func(c *storageos.Config) { c.Username = "" }, "username is required"},
		{"missing password", func(c *storageos.Config) { c.Password = "" }, "password is required"},
		{"negative timeout", func(c *storageos.Config) { c.Timeout = -time.Second }, "timeout must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mutate(&cfg)
			c, err := storageos.New(cfg)
			if tt.wantErr == "" {
				if err != nil || c == nil {
					t.Fatalf("New(%q) = %v, %v; want a client", cfg.Endpoint, c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New(%q) error = %v, want it to contain %q", cfg.Endpoint, err, tt.wantErr)
			}
		})
	}
}

func TestEndpointPathPrefixIsKept(t *testing.T) {
	sim := storageossim.New(storageossim.Config{Username: user, Password: pass})
	mux := http.NewServeMux()
	mux.Handle("/proxy/", http.StripPrefix("/proxy", sim))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL + "/proxy/", Username: user, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNamespaces(context.Background()); err != nil {
		t.Fatalf("ListNamespaces via path prefix: %v", err)
	}
}

// The first call logs in, and later calls reuse the token; a refused login
// fails the call before it is sent.
func TestLogin(t *testing.T) {
	tests := []struct {
		name       string
		simCfg     storageossim.Config
		wantErr    error
		wantStatus int
	}{
		{name: "ok, Bearer prefix", simCfg: storageossim.Config{Username: user, Password: pass}},
		{name: "ok, bare token", simCfg: storageossim.Config{Username: user, Password: pass, OmitBearerPrefix: true}},
		{name: "bad password", simCfg: storageossim.Config{Username: user, Password: "other"}, wantErr: storageos.ErrUnauthorized, wantStatus: 401},
		{name: "bad username", simCfg: storageossim.Config{Username: "root", Password: pass}, wantErr: storageos.ErrUnauthorized, wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withSimConfig(tt.simCfg))
			_, err := h.client.ListNamespaces(context.Background())
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ListNamespaces: %v", err)
				}
				// The stored token works without another login.
				if _, err := h.client.ListNamespaces(context.Background()); err != nil {
					t.Fatalf("ListNamespaces after login: %v", err)
				}
				h.wantCalls(t, map[string]int{storageossim.OpLogin: 1, storageossim.OpListNamespaces: 2})
				if got := h.requests(storageos.OpLogin, "200"); got != 1 {
					t.Errorf("login 200 requests = %v, want 1", got)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("login error = %v, want %v", err, tt.wantErr)
			}
			var apiErr *storageos.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("login error %T is not *APIError", err)
			}
			if apiErr.StatusCode != tt.wantStatus || apiErr.Message != storageossim.MsgAuthRequired || apiErr.Operation != storageos.OpLogin {
				t.Errorf("APIError = %+v", apiErr)
			}
			// A failed login is not retried, and the call it was for is not sent.
			h.wantCalls(t, map[string]int{storageossim.OpLogin: 1, storageossim.OpListNamespaces: 0})
		})
	}
}

func TestLoginTokenFromBodyWhenHeaderMissing(t *testing.T) {
	strip := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				if k != "Authorization" {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	}
	h := newHarness(t, withWrap(strip))
	if _, err := h.client.ListNamespaces(context.Background()); err != nil {
		t.Fatalf("ListNamespaces with token only in the UserSession body: %v", err)
	}
}

func TestLoginWithoutTokenFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","username":"admin"}`)
	}))
	defer srv.Close()
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL, Username: user, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNamespaces(context.Background()); !errors.Is(err, storageos.ErrNoAuthToken) {
		t.Fatalf("ListNamespaces error = %v, want ErrNoAuthToken", err)
	}
}

func TestExpiredTokenReloginAndSingleRetry(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		h := newHarness(t)
		h.logIn(t)
		h.sim.ExpireTokens()
		nss, err := h.client.ListNamespaces(context.Background())
		if err != nil {
			t.Fatalf("ListNamespaces after expiry: %v", err)
		}
		if len(nss) != 1 {
			t.Fatalf("got %d namespaces, want 1", len(nss))
		}
		h.wantCalls(t, map[string]int{storageossim.OpLogin: 2, storageossim.OpListNamespaces: 3})
		if got := h.requests(storageos.OpListNamespaces, "401"); got != 1 {
			t.Errorf("list 401 requests = %v, want 1", got)
		}
		if got := h.requests(storageos.OpListNamespaces, "200"); got != 2 {
			t.Errorf("list 200 requests = %v, want 2", got)
		}
	})
	t.Run("delete", func(t *testing.T) {
		h := newHarness(t)
		ns := h.sim.AddNamespace("team-a")
		h.logIn(t)
		h.sim.ExpireTokens()
		if err := h.client.DeleteNamespace(context.Background(), ns.ID, ns.Version); err != nil {
			t.Fatalf("DeleteNamespace after expiry: %v", err)
		}
		h.wantCalls(t, map[string]int{storageossim.OpLogin: 2, storageossim.OpDeleteNamespace: 2})
		if _, ok := h.sim.Namespace("team-a"); ok {
			t.Error("namespace still exists")
		}
	})
	t.Run("token TTL elapsed", func(t *testing.T) {
		var mu sync.Mutex
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		h := newHarness(t, withSimConfig(storageossim.Config{Username: user, Password: pass, TokenTTL: time.Minute, Now: clock}))
		if _, err := h.client.ListNamespaces(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		if _, err := h.client.ListNamespaces(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.wantCalls(t, map[string]int{storageossim.OpLogin: 2, storageossim.OpListNamespaces: 3})
	})
}

func TestUnauthorizedAfterRelogin(t *testing.T) {
	t.Run("retry still 401", func(t *testing.T) {
		// The server accepts the login but rejects every list request.
		reject := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && r.URL.Path == "/v2/namespaces" {
					r.Header.Del("Authorization")
				}
				next.ServeHTTP(w, r)
			})
		}
		h := newHarness(t, withWrap(reject))
		_, err := h.client.ListNamespaces(context.Background())
		if !errors.Is(err, storageos.ErrUnauthorized) {
			t.Fatalf("error = %v, want ErrUnauthorized", err)
		}
		var apiErr *storageos.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Operation != storageos.OpListNamespaces {
			t.Fatalf("error = %#v, want *APIError 401 list_namespaces", err)
		}
		// Lazy login, first attempt, re-login, exactly one retry.
		h.wantCalls(t, map[string]int{storageossim.OpLogin: 2, storageossim.OpListNamespaces: 2})
	})
	t.Run("re-login rejected", func(t *testing.T) {
		h := newHarness(t)
		h.logIn(t)
		h.sim.ExpireTokens()
		h.sim.SetCredentials(user, "rotated")
		_, err := h.client.ListNamespaces(context.Background())
		if !errors.Is(err, storageos.ErrUnauthorized) {
			t.Fatalf("error = %v, want ErrUnauthorized", err)
		}
		h.wantCalls(t, map[string]int{storageossim.OpLogin: 2, storageossim.OpListNamespaces: 2})
	})
}

func TestConcurrentCallsShareOneRelogin(t *testing.T) {
	h := newHarness(t)
	const n = 16
	run := func() {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				if _, err := h.client.ListNamespaces(context.Background()); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	run() // concurrent lazy logins collapse into one
	h.wantCalls(t, map[string]int{storageossim.OpLogin: 1})
	h.sim.ExpireTokens()
	run() // concurrent 401s collapse into one re-login
	h.wantCalls(t, map[string]int{storageossim.OpLogin: 2})
}

func TestListNamespaces(t *testing.T) {
	h := newHarness(t)
	a := h.sim.AddNamespace("team-a")
	b, err := h.sim.SetLabels("default", map[string]string{"app": "x"})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := h.client.ListNamespaces(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nss) != 2 {
		t.Fatalf("got %d namespaces, want 2: %+v", len(nss), nss)
	}
	byName := make(map[string]storageos.Namespace, len(nss))
	for _, ns := range nss {
		byName[ns.Name] = ns
	}
	for _, want := range []storageossim.Namespace{a, b} {
		got, ok := byName[want.Name]
		if !ok {
			t.Fatalf("namespace %q missing", want.Name)
		}
		if got.ID != want.ID || got.Version != want.Version || got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
			t.Errorf("namespace %q = %+v, want id %s version %s and timestamps", want.Name, got, want.ID, want.Version)
		}
		if len(got.Labels) != len(want.Labels) || got.Labels["app"] != want.Labels["app"] {
			t.Errorf("namespace %q labels = %v, want %v", want.Name, got.Labels, want.Labels)
		}
	}
}

func TestListNamespacesEmptyAndBadJSON(t *testing.T) {
	body := "null"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/auth/login" {
			w.Header().Set("Authorization", "Bearer t")
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL, Username: user, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := c.ListNamespaces(context.Background())
	if err != nil || nss == nil || len(nss) != 0 {
		t.Fatalf("null list = %v, %v; want empty non-nil slice", nss, err)
	}
	body = "<html>"
	if _, err := c.ListNamespaces(context.Background()); err == nil || !strings.Contains(err.Error(), "decoding response") {
		t.Fatalf("bad JSON error = %v", err)
	}
}

func TestDeleteNamespace(t *testing.T) {
	tests := []struct {
		name string
		opts []harnessOpt
		// setup prepares the sim and returns the id and version to delete.
		setup       func(t *testing.T, sim *storageossim.Server) (id, version string)
		wantErr     error // sentinel, nil for success
		wantStatus  int
		wantMessage string
		wantGone    bool
	}{
		{
			name: "ok",
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				ns := sim.AddNamespace("team-a")
				return ns.ID, ns.Version
			},
			wantGone: true,
		},
		{
			name: "unknown id is ErrNotFound",
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				sim.AddNamespace("team-a")
				return "00000000-0000-4000-8000-000000000000", "MQ"
			},
			wantErr: storageos.ErrNotFound, wantStatus: 404, wantMessage: storageossim.MsgNotFound,
		},
		{
			name: "id with a slash stays one path segment",
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				sim.AddNamespace("team-a")
				return "../namespaces", "MQ"
			},
			wantErr: storageos.ErrNotFound, wantStatus: 404, wantMessage: storageossim.MsgNotFound,
		},
		{
			name: "volumes left is ErrNamespaceNotEmpty",
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				ns := sim.AddNamespace("team-a")
				if err := sim.SetVolumes("team-a", 2); err != nil {
					t.Fatal(err)
				}
				return ns.ID, ns.Version
			},
			wantErr: storageos.ErrNamespaceNotEmpty, wantStatus: 409, wantMessage: storageossim.MsgInUse,
		},
		{
			name: "stale version is ErrStaleVersion",
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				ns := sim.AddNamespace("team-a")
				if _, err := sim.SetLabels("team-a", map[string]string{"k": "v"}); err != nil {
					t.Fatal(err)
				}
				return ns.ID, ns.Version
			},
			wantErr: storageos.ErrStaleVersion, wantStatus: 412, wantMessage: storageossim.MsgStale,
		},
		{
			// StorageOS's OpenAPI document says 409 for a stale version too.
			name: "stale version answered 409 is ErrStaleVersion",
			opts: []harnessOpt{withSimConfig(storageossim.Config{Username: user, Password: pass, StaleVersionConflict: true})},
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				ns := sim.AddNamespace("team-a")
				if _, err := sim.SetLabels("team-a", map[string]string{"k": "v"}); err != nil {
					t.Fatal(err)
				}
				return ns.ID, ns.Version
			},
			wantErr: storageos.ErrStaleVersion, wantStatus: 409, wantMessage: storageossim.MsgStale,
		},
		{
			name: "outage is a plain *APIError",
			setup: func(t *testing.T, sim *storageossim.Server) (string, string) {
				ns := sim.AddNamespace("team-a")
				sim.SetOutage(true)
				return ns.ID, ns.Version
			},
			wantStatus: 503, wantMessage: storageossim.MsgUnavailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			h.logIn(t)
			id, version := tt.setup(t, h.sim)
			err := h.client.DeleteNamespace(context.Background(), id, version)
			_, exists := h.sim.Namespace("team-a")
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("DeleteNamespace: %v", err)
				}
				if exists == tt.wantGone {
					t.Errorf("namespace exists = %v after delete", exists)
				}
				h.wantCalls(t, map[string]int{storageossim.OpDeleteNamespace: 1})
				if got := h.requests(storageos.OpDeleteNamespace, "200"); got != 1 {
					t.Errorf("delete 200 requests = %v, want 1", got)
				}
				return
			}
			if err == nil {
				t.Fatal("DeleteNamespace succeeded, want an error")
			}
			if !exists {
				t.Error("namespace was deleted despite the error")
			}
			var apiErr *storageos.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T) is not *APIError", err, err)
			}
			if apiErr.StatusCode != tt.wantStatus || apiErr.Message != tt.wantMessage || apiErr.Operation != storageos.OpDeleteNamespace {
				t.Errorf("APIError = %+v, want status %d message %q", apiErr, tt.wantStatus, tt.wantMessage)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantErr)
			}
			for _, s := range []error{storageos.ErrNotFound, storageos.ErrNamespaceNotEmpty, storageos.ErrStaleVersion, storageos.ErrUnauthorized, storageos.ErrForbidden} {
				if s != tt.wantErr && errors.Is(err, s) {
					t.Errorf("error %v also matches %v", err, s)
				}
			}
		})
	}
}

func TestDeleteNamespaceAfterVolumesRemoved(t *testing.T) {
	h := newHarness(t)
	ns := h.sim.AddNamespace("team-a")
	if err := h.sim.SetVolumes("team-a", 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.client.DeleteNamespace(ctx, ns.ID, ns.Version); !errors.Is(err, storageos.ErrNamespaceNotEmpty) {
		t.Fatalf("first delete = %v, want ErrNamespaceNotEmpty", err)
	}
	if err := h.sim.SetVolumes("team-a", 0); err != nil {
		t.Fatal(err)
	}
	if err := h.client.DeleteNamespace(ctx, ns.ID, ns.Version); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if err := h.client.DeleteNamespace(ctx, ns.ID, ns.Version); !errors.Is(err, storageos.ErrNotFound) {
		t.Fatalf("third delete = %v, want ErrNotFound", err)
	}
	h.wantCalls(t, map[string]int{storageossim.OpLogin: 1, storageossim.OpDeleteNamespace: 3})
	for code, want := range map[string]float64{"409": 1, "200": 1, "404": 1} {
		if got := h.requests(storageos.OpDeleteNamespace, code); got != want {
			t.Errorf("delete %s requests = %v, want %v", code, got, want)
		}
	}
}

func TestDeleteNamespaceEscapesURL(t *testing.T) {
	var gotPath, gotQuery, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/auth/login" {
			w.Header().Set("Authorization", "Bearer tok")
			return
		}
		gotPath, gotQuery, gotAuth = r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization")
	}))
	defer srv.Close()
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL, Username: user, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteNamespace(context.Background(), "a/b c", "v+1&x=2"); err != nil {
		t.Fatal(err)
	}
	if gotPath != "/v2/namespaces/a%2Fb%20c" {
		t.Errorf("path = %q", gotPath)
	}
	if gotQuery != "version=v%2B1%26x%3D2" {
		t.Errorf("query = %q", gotQuery)
	}
	if gotAuth != "Bearer tok" {
		t.Errorf("Authorization = %q", gotAuth)
	}
}

func TestDeleteNamespaceRejectsEmptyArgs(t *testing.T) {
	h := newHarness(t)
	if err := h.client.DeleteNamespace(context.Background(), "", "v"); err == nil {
		t.Error("empty id accepted")
	}
	if err := h.client.DeleteNamespace(context.Background(), "id", ""); err == nil {
		t.Error("empty version accepted")
	}
	h.wantCalls(t, map[string]int{storageossim.OpLogin: 0, storageossim.OpDeleteNamespace: 0})
}

func TestOutage(t *testing.T) {
	h := newHarness(t)
	h.sim.SetOutage(true)
	ctx := context.Background()
	check := func(what string, err error, op string) {
		t.Helper()
		var apiErr *storageos.APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: error %v is not *APIError", what, err)
		}
		if apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Message != storageossim.MsgUnavailable || apiErr.Operation != op {
			t.Errorf("%s: APIError = %+v", what, apiErr)
		}
		if errors.Unwrap(err) != nil {
			t.Errorf("%s: 503 unwraps to %v, want no sentinel", what, errors.Unwrap(err))
		}
		if !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), storageossim.MsgUnavailable) {
			t.Errorf("%s: error text %q lacks status or message", what, err)
		}
	}
	_, err := h.client.ListNamespaces(ctx)
	check("login", err, storageos.OpLogin)

	h.sim.SetOutage(false)
	h.logIn(t)
	h.sim.SetOutage(true)
	_, err = h.client.ListNamespaces(ctx)
	check("list", err, storageos.OpListNamespaces)
	h.wantCalls(t, map[string]int{storageossim.OpLogin: 2, storageossim.OpListNamespaces: 2})
	if got := h.requests(storageos.OpListNamespaces, "503"); got != 1 {
		t.Errorf("list 503 requests = %v, want 1", got)
	}
}

func TestErrorBodyIsSizeLimited(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/auth/login" {
			w.Header().Set("Authorization", "Bearer tok")
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, strings.Repeat("x", 4<<20))
	}))
	defer srv.Close()
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL, Username: user, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListNamespaces(context.Background())
	var apiErr *storageos.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("error = %v, want *APIError 500", err)
	}
	if len(apiErr.Message) > 600 {
		t.Errorf("message length %d, want it truncated", len(apiErr.Message))
	}
}

// An answer longer than responselimit.MaxBody fails its call instead of being
// read whole, with the HTTP client the caller gave too: the endpoint is the
// Bundle author's choice.
func TestAnswerIsSizeLimited(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/auth/login" {
			w.Header().Set("Authorization", "Bearer tok")
			return
		}
		_, _ = w.Write(make([]byte, responselimit.MaxBody+1))
	}))
	defer srv.Close()
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL, Username: user, Password: pass, HTTPClient: srv.Client(), Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNamespaces(context.Background()); !errors.Is(err, responselimit.ErrTooLarge) {
		t.Errorf("error = %.300v, want ErrTooLarge", err)
	}
}

func TestTimeout(t *testing.T) {
	h := newHarness(t, withTimeout(50*time.Millisecond))
	h.logIn(t)
	release := h.sim.Block()
	defer release()

	start := time.Now()
	_, err := h.client.ListNamespaces(context.Background())
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want context.DeadlineExceeded", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("call took %v with a 50ms timeout", elapsed)
	}
	if got := h.requests(storageos.OpListNamespaces, "timeout"); got != 1 {
		t.Errorf("list timeout requests = %v, want 1", got)
	}

	// The caller's own deadline wins when it is shorter.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.client.DeleteNamespace(ctx, "id", "v"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx error = %v, want context.Canceled", err)
	}
}

func TestTransportErrorDoesNotPanic(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	reg := prometheus.NewRegistry()
	m := storageos.NewMetrics(reg)
	c, err := storageos.New(storageos.Config{Endpoint: url, Username: user, Password: pass, Metrics: m, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteNamespace(context.Background(), "id", "v"); err == nil {
		t.Fatal("delete against a closed server succeeded")
	}
	if got := testutil.ToFloat64(m.RequestsTotal.WithLabelValues(storageos.OpLogin, "error")); got != 1 {
		t.Errorf("login error requests = %v, want 1", got)
	}
}

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	ns := h.sim.AddNamespace("team-a")
	ctx := context.Background()
	if _, err := h.client.ListNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.client.DeleteNamespace(ctx, ns.ID, ns.Version); err != nil {
		t.Fatal(err)
	}
	if err := h.client.DeleteNamespace(ctx, ns.ID, ns.Version); !errors.Is(err, storageos.ErrNotFound) {
		t.Fatal(err)
	}

	want := `
# HELP limbo_storageos_requests_total StorageOS API requests by operation and HTTP status code (or timeout/canceled/error).
# TYPE limbo_storageos_requests_total counter
limbo_storageos_requests_total{code="200",operation="delete_namespace"} 1
limbo_storageos_requests_total{code="200",operation="list_namespaces"} 1
limbo_storageos_requests_total{code="200",operation="login"} 1
limbo_storageos_requests_total{code="404",operation="delete_namespace"} 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "limbo_storageos_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(h.metrics.RequestDuration, "limbo_storageos_request_duration_seconds"); n != 4 {
		t.Errorf("duration series = %d, want 4", n)
	}
	// Each histogram series has observed one request.
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "limbo_storageos_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetHistogram().GetSampleCount(); c != 1 {
				t.Errorf("histogram %v sample count = %d, want 1", m.GetLabel(), c)
			}
		}
	}
}

func TestNewMetricsTwiceOnSameRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1 := storageos.NewMetrics(reg)
	m2 := storageos.NewMetrics(reg) // must not panic
	m1.RequestsTotal.WithLabelValues("x", "200").Inc()
	if got := testutil.ToFloat64(m2.RequestsTotal.WithLabelValues("x", "200")); got != 1 {
		t.Errorf("second Metrics does not share the registered collector: %v", got)
	}
	_ = storageos.NewMetrics(nil) // unregistered is fine
}

func TestAPIErrorText(t *testing.T) {
	h := newHarness(t)
	ns := h.sim.AddNamespace("team-a")
	_ = h.sim.SetVolumes("team-a", 1)
	err := h.client.DeleteNamespace(context.Background(), ns.ID, ns.Version)
	want := fmt.Sprintf("storageos: delete_namespace: HTTP 409 Conflict: %s", storageossim.MsgInUse)
	if err == nil || err.Error() != want {
		t.Errorf("error text = %q, want %q", err, want)
	}
}

// A 404 means "already gone" and a 409 "in use" "still holds volumes" only to a
// namespace delete: to a login or a listing a 404 is a wrong endpoint (or a
// proxy's page), which no caller may take for success, and a 409 "already
// exists"; so only DeleteNamespace's match ErrNotFound and ErrNamespaceNotEmpty.
// A 409 to a delete that says its version is stale is ErrStaleVersion; any other
// (its wording unknown) is "still holds volumes", as before such a 409 was
// known of.
func TestNotFoundIsOnlyTheDeletes(t *testing.T) {
	for _, status := range []struct {
		code     int
		body     string
		sentinel error
	}{
		{http.StatusNotFound, "Not Found", storageos.ErrNotFound},
		{http.StatusConflict, `{"error":"in use"}`, storageos.ErrNamespaceNotEmpty},
		{http.StatusConflict, "Conflict", storageos.ErrNamespaceNotEmpty},
		{http.StatusConflict, `{"error":"namespace has volumes"}`, storageos.ErrNamespaceNotEmpty},
		{http.StatusConflict, `{"error":"Attempting to write stale object"}`, storageos.ErrStaleVersion},
	} {
		for _, tc := range []struct {
			name string
			path string // answered status.code with status.body; the rest by the simulator
			call func(c *storageos.Client, ns storageossim.Namespace) error
			want bool
		}{
			{"login", "/v2/auth/login", func(c *storageos.Client, _ storageossim.Namespace) error {
				_, err := c.ListNamespaces(context.Background())
				return err
			}, false},
			{"list", "/v2/namespaces", func(c *storageos.Client, _ storageossim.Namespace) error {
				_, err := c.ListNamespaces(context.Background())
				return err
			}, false},
			{"delete", "/v2/namespaces/", func(c *storageos.Client, ns storageossim.Namespace) error {
				return c.DeleteNamespace(context.Background(), ns.ID, ns.Version)
			}, true},
		} {
			t.Run(fmt.Sprintf("%s %d %s", tc.name, status.code, status.body), func(t *testing.T) {
				h := newHarness(t, withWrap(func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.URL.Path == tc.path || strings.HasSuffix(tc.path, "/") && strings.HasPrefix(r.URL.Path, tc.path) {
							w.WriteHeader(status.code)
							_, _ = io.WriteString(w, status.body)
							return
						}
						next.ServeHTTP(w, r)
					})
				}))
				ns := h.sim.AddNamespace("team-a")
				err := tc.call(h.client, ns)
				if err == nil {
					t.Fatalf("the call succeeded; want the %d's error", status.code)
				}
				if got := errors.Is(err, status.sentinel); got != tc.want {
					t.Errorf("%v: errors.Is(%v) = %v, want %v", err, status.sentinel, got, tc.want)
				}
			})
		}
	}
}

// Only a 2xx is a delete done: an answer of another status that the HTTP client
// does not follow (300 without a Location) is an error, and the namespace stays.
func TestDeleteNamespaceRedirectionIsNoSuccess(t *testing.T) {
	h := newHarness(t, withWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				w.WriteHeader(http.StatusMultipleChoices)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	ns := h.sim.AddNamespace("team-a")
	err := h.client.DeleteNamespace(context.Background(), ns.ID, ns.Version)
	var apiErr *storageos.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusMultipleChoices {
		t.Fatalf("DeleteNamespace = %v, want the 300's *APIError", err)
	}
	if _, ok := h.sim.Namespace("team-a"); !ok {
		t.Error("the namespace is gone")
	}
}

// GetNamespace reads one namespace by its id, with the version a delete needs,
// and says ErrNotFound for one gone.
func TestGetNamespace(t *testing.T) {
	h := newHarness(t)
	ns := h.sim.AddNamespace("team-a")
	ctx := context.Background()
	got, err := h.client.GetNamespace(ctx, ns.ID)
	if err != nil {
		t.Fatalf("GetNamespace: %v", err)
	}
	if got.ID != ns.ID || got.Name != "team-a" || got.Version != ns.Version {
		t.Fatalf("GetNamespace = %+v, want %+v", got, ns)
	}
	if err := h.client.DeleteNamespace(ctx, got.ID, got.Version); err != nil {
		t.Fatalf("DeleteNamespace: %v", err)
	}
	if _, err := h.client.GetNamespace(ctx, ns.ID); !errors.Is(err, storageos.ErrNotFound) {
		t.Fatalf("GetNamespace after the delete = %v, want ErrNotFound", err)
	}
}

// A front that answers a DELETE with a redirect (a trailing-slash rule) is not
// followed: Go's client would send the DELETE again as a GET, whose 200 read as
// "deleted" while the namespace stays, and would send the bearer token to
// wherever the redirect points.
func TestRedirectNotFollowed(t *testing.T) {
	var redirected atomic.Int32
	h := newHarness(t, withWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/") {
				redirected.Add(1)
			}
			if r.Method == http.MethodDelete {
				http.Redirect(w, r, r.URL.Path+"/?"+r.URL.RawQuery, http.StatusMovedPermanently)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	ns := h.sim.AddNamespace("team-a")
	err := h.client.DeleteNamespace(context.Background(), ns.ID, ns.Version)
	var apiErr *storageos.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusMovedPermanently || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("DeleteNamespace = %v, want the 301's *APIError saying it was not followed", err)
	}
	if n := redirected.Load(); n != 0 {
		t.Errorf("the redirect was followed (%d requests to it)", n)
	}
	if _, ok := h.sim.Namespace("team-a"); !ok {
		t.Error("the namespace is gone")
	}
}

// Credentials StorageOS refused are not sent again for refusedlogin.Retry: each call
// answers with the refusal. Every failed pass logged in again, a dozen times in
// the first ten seconds of a wrong password.
func TestRefusedLoginNotRetriedAtOnce(t *testing.T) {
	sim := storageossim.New(storageossim.Config{Username: user, Password: pass})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	c, err := storageos.New(storageos.Config{Endpoint: srv.URL, Username: user, Password: "wrong", HTTPClient: srv.Client(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := c.ListNamespaces(ctx); !errors.Is(err, storageos.ErrUnauthorized) {
			t.Fatalf("ListNamespaces = %v, want ErrUnauthorized", err)
		}
	}
	if n := sim.Calls(storageossim.OpLogin); n != 1 {
		t.Errorf("%d logins for three calls within %v, want 1", n, refusedlogin.Retry)
	}
	clk.SetTime(clk.Now().Add(refusedlogin.Retry))
	if _, err := c.ListNamespaces(ctx); !errors.Is(err, storageos.ErrUnauthorized) {
		t.Fatalf("ListNamespaces = %v, want ErrUnauthorized", err)
	}
	if n := sim.Calls(storageossim.OpLogin); n != 2 {
		t.Errorf("%d logins after the retry wait, want 2", n)
	}
}
