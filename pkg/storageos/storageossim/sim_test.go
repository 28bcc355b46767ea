package storageossim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

type tclient struct {
	t   *testing.T
	srv *httptest.Server
}

func newT(t *testing.T, cfg Config) (*Server, *tclient) {
	t.Helper()
	s := New(cfg)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, &tclient{t: t, srv: srv}
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (c *tclient) do(method, path, auth, body string) result {
	c.t.Helper()
	var rdr io.Reader
	if body != "" {
		rdr = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, rdr)
	if err != nil {
		c.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return result{resp.StatusCode, resp.Header, b}
}

func (c *tclient) login() string {
	c.t.Helper()
	r := c.do("POST", "/v2/auth/login", "", `{"username":"storageos","password":"storageos"}`)
	if r.status != 200 {
		c.t.Fatalf("login: %d %s", r.status, r.body)
	}
	return r.header.Get("Authorization")
}

func wantError(t *testing.T, r result, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var eb map[string]any
	if err := json.Unmarshal(r.body, &eb); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if len(eb) != 1 {
		t.Errorf("error body %s has keys other than \"error\"", r.body)
	}
	if msg != "" && eb["error"] != msg {
		t.Errorf("error = %q, want %q", eb["error"], msg)
	}
	if s, _ := eb["error"].(string); s == "" {
		t.Errorf("empty error message in %s", r.body)
	}
}

func TestLoginWireFormat(t *testing.T) {
	_, c := newT(t, Config{TokenTTL: 90 * time.Second})
	r := c.do("POST", "/v2/auth/login", "", `{"username":"storageos","password":"storageos"}`)
	if r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	auth := r.header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.Count(token, ".") != 2 {
		t.Fatalf("Authorization = %q, want \"Bearer <jwt>\"", auth)
	}
	if got := r.header.Get("Authorization-Expires-Seconds"); got != "90" {
		t.Errorf("Authorization-Expires-Seconds = %q, want 90", got)
	}
	var us struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Session  struct {
			ExpiresInSeconds uint64 `json:"expiresInSeconds"`
			Token            string `json:"token"`
		} `json:"session"`
	}
	if err := json.Unmarshal(r.body, &us); err != nil {
		t.Fatal(err)
	}
	if us.ID == "" || us.Username != "storageos" || us.Session.Token != token || us.Session.ExpiresInSeconds != 90 {
		t.Errorf("UserSession = %+v", us)
	}

	_, c2 := newT(t, Config{OmitBearerPrefix: true})
	if got := c2.login(); strings.HasPrefix(got, "Bearer ") || got == "" {
		t.Errorf("OmitBearerPrefix: Authorization = %q", got)
	}
}

func TestLoginErrors(t *testing.T) {
	s, c := newT(t, Config{Username: "u", Password: "p"})
	tests := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"bad password", `{"username":"u","password":"x"}`, 401, MsgAuthRequired},
		{"bad username", `{"username":"x","password":"p"}`, 401, MsgAuthRequired},
		{"malformed", `{`, 400, ""},
		{"missing password", `{"username":"u"}`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do("POST", "/v2/auth/login", "", tt.body)
			wantError(t, r, tt.status, tt.msg)
			if r.header.Get("Authorization") != "" {
				t.Error("failed login returned a token")
			}
		})
	}
	if got := s.Calls(OpLogin); got != len(tests) {
		t.Errorf("Calls(login) = %d, want %d", got, len(tests))
	}
}

func TestAuthRequired(t *testing.T) {
	s, c := newT(t, Config{})
	wantError(t, c.do("GET", "/v2/namespaces", "", ""), 401, MsgAuthRequired)
	wantError(t, c.do("GET", "/v2/namespaces", "Bearer nope", ""), 401, MsgAuthRequired)
	auth := c.login()
	if r := c.do("GET", "/v2/namespaces", auth, ""); r.status != 200 {
		t.Fatalf("with bearer: %d", r.status)
	}
	bare := strings.TrimPrefix(auth, "Bearer ")
	if r := c.do("GET", "/v2/namespaces", bare, ""); r.status != 200 {
		t.Fatalf("with bare token: %d", r.status)
	}
	wantError(t, c.do("GET", "/v2/namespaces", "Bearer "+auth, ""), 401, MsgAuthRequired)

	s.ExpireTokens()
	wantError(t, c.do("GET", "/v2/namespaces", auth, ""), 401, MsgAuthRequired)

	auth = c.login()
	r := c.do("POST", "/v2/auth/refresh", auth, "")
	if r.status != 200 {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	fresh := r.header.Get("Authorization")
	if fresh == auth || !strings.HasPrefix(fresh, "Bearer ") {
		t.Fatalf("refresh Authorization = %q", fresh)
	}
	if r := c.do("GET", "/v2/namespaces", fresh, ""); r.status != 200 {
		t.Fatalf("refreshed token: %d", r.status)
	}
}

func TestTokenTTL(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	_, c := newT(t, Config{TokenTTL: time.Minute, Now: clock})
	auth := c.login()
	mu.Lock()
	now = now.Add(59 * time.Second)
	mu.Unlock()
	if r := c.do("GET", "/v2/namespaces", auth, ""); r.status != 200 {
		t.Fatalf("before expiry: %d", r.status)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	wantError(t, c.do("GET", "/v2/namespaces", auth, ""), 401, MsgAuthRequired)
}

func TestListWireFormat(t *testing.T) {
	s, c := newT(t, Config{})
	s.AddNamespace("team-b")
	if _, err := s.SetLabels("team-b", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	r := c.do("GET", "/v2/namespaces", c.login(), "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 {
		t.Fatalf("got %d namespaces: %s", len(raw), r.body)
	}
	for _, ns := range raw {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range ns {
				if !yield(k) {
					return
				}
			}
		})
		if want := []string{"createdAt", "id", "labels", "name", "updatedAt", "version"}; !slices.Equal(keys, want) {
			t.Errorf("keys = %v, want %v", keys, want)
		}
	}
	var list []Namespace
	_ = json.Unmarshal(r.body, &list)
	if list[0].Name != "default" || list[1].Name != "team-b" || list[1].Labels["k"] != "v" {
		t.Errorf("list = %+v", list)
	}
	if !list[1].UpdatedAt.After(list[1].CreatedAt) && !list[1].UpdatedAt.Equal(list[1].CreatedAt) {
		t.Errorf("updatedAt before createdAt: %+v", list[1])
	}
}

func TestVersionsChangeOnMutation(t *testing.T) {
	s := New(Config{})
	seen := map[string]bool{}
	for _, ns := range s.Namespaces() {
		seen[ns.Version] = true
	}
	a := s.AddNamespace("a")
	if again := s.AddNamespace("a"); again.ID != a.ID || again.Version != a.Version {
		t.Errorf("AddNamespace of an existing name changed it: %+v vs %+v", again, a)
	}
	seen[a.Version] = true
	prev := a.Version
	for range 20 {
		ns, err := s.SetLabels("a", map[string]string{"x": "y"})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Version == prev || seen[ns.Version] || len(ns.Version) >= 30 {
			t.Fatalf("version %q not fresh (previous %q)", ns.Version, prev)
		}
		seen[ns.Version] = true
		prev = ns.Version
	}
	before, _ := s.Namespace("a")
	if err := s.SetVolumes("a", 3); err != nil {
		t.Fatal(err)
	}
	after, _ := s.Namespace("a")
	if after.Version != before.Version || after.Volumes != 3 {
		t.Errorf("SetVolumes: %+v -> %+v", before, after)
	}
	if err := s.SetVolumes("missing", 1); err == nil {
		t.Error("SetVolumes on a missing namespace succeeded")
	}
	if _, err := s.SetLabels("missing", nil); err == nil {
		t.Error("SetLabels on a missing namespace succeeded")
	}
}

func TestDelete(t *testing.T) {
	s, c := newT(t, Config{})
	auth := c.login()
	del := func(id, query string) result {
		return c.do("DELETE", "/v2/namespaces/"+url.PathEscape(id)+query, auth, "")
	}

	ns := s.AddNamespace("a")
	wantError(t, del(ns.ID, ""), 400, "")
	wantError(t, del(ns.ID, "?version="), 400, "")
	wantError(t, del(ns.ID, "?version=x&ignore-version=maybe"), 400, "")
	wantError(t, del("no-such-id", "?version="+ns.Version), 404, MsgNotFound)
	wantError(t, del(ns.ID, "?version=stale"), 412, MsgStale)

	if err := s.SetVolumes("a", 1); err != nil {
		t.Fatal(err)
	}
	wantError(t, del(ns.ID, "?version="+url.QueryEscape(ns.Version)), 409, MsgInUse)
	_ = s.SetVolumes("a", 0)

	updated, _ := s.SetLabels("a", map[string]string{"k": "v"})
	wantError(t, del(ns.ID, "?version="+url.QueryEscape(ns.Version)), 412, MsgStale)
	if r := del(ns.ID, "?version="+url.QueryEscape(updated.Version)); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if _, ok := s.Namespace("a"); ok {
		t.Fatal("namespace still present")
	}
	wantError(t, del(ns.ID, "?version="+url.QueryEscape(updated.Version)), 404, MsgNotFound)

	b := s.AddNamespace("b")
	wantError(t, del(b.ID, "?ignore-version=true"), 400, "version is required")
	if r := del(b.ID, "?version=stale&ignore-version=true"); r.status != 200 {
		t.Fatalf("ignore-version delete: %d %s", r.status, r.body)
	}
	if got := s.Calls(OpDeleteNamespace); got != 11 {
		t.Errorf("Calls(delete) = %d, want 11", got)
	}
}

// With StaleVersionConflict a stale version is answered 409, as the text of the
// API's version parameter says, with the stale message; a namespace in use is
// still 409 "in use", and ignore-version still deletes.
func TestDeleteStaleVersionConflict(t *testing.T) {
	s, c := newT(t, Config{StaleVersionConflict: true})
	auth := c.login()
	del := func(id, query string) result {
		return c.do("DELETE", "/v2/namespaces/"+url.PathEscape(id)+query, auth, "")
	}
	ns := s.AddNamespace("a")
	wantError(t, del(ns.ID, "?version=stale"), 409, MsgStale)
	_ = s.SetVolumes("a", 1)
	wantError(t, del(ns.ID, "?version="+url.QueryEscape(ns.Version)), 409, MsgInUse)
	_ = s.SetVolumes("a", 0)
	if r := del(ns.ID, "?version=stale&ignore-version=true"); r.status != 200 {
		t.Fatalf("ignore-version delete: %d %s", r.status, r.body)
	}
}

func TestCreateAndGet(t *testing.T) {
	s, c := newT(t, Config{})
	auth := c.login()
	r := c.do("POST", "/v2/namespaces", auth, `{"name":"x","labels":{"a":"b"}}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var created Namespace
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	if created.ID == "" || created.Version == "" || created.Labels["a"] != "b" {
		t.Errorf("created = %+v", created)
	}
	wantError(t, c.do("POST", "/v2/namespaces", auth, `{"name":"x"}`), 409, MsgExists)
	wantError(t, c.do("POST", "/v2/namespaces", auth, `{}`), 400, "")

	r = c.do("GET", "/v2/namespaces/"+created.ID, auth, "")
	var got Namespace
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil || got.ID != created.ID || got.Version != created.Version {
		t.Errorf("get: %d %s", r.status, r.body)
	}
	wantError(t, c.do("GET", "/v2/namespaces/nope", auth, ""), 404, MsgNotFound)
	if got, _ := s.Namespace("x"); got.ID != created.ID {
		t.Errorf("Namespace(x) = %+v", got)
	}
}

func TestRoutingErrors(t *testing.T) {
	s, c := newT(t, Config{})
	auth := c.login()
	wantError(t, c.do("GET", "/v2/volumes", auth, ""), 404, MsgNotFound)
	wantError(t, c.do("GET", "/v2/namespaces/a/b", auth, ""), 404, MsgNotFound)
	wantError(t, c.do("PUT", "/v2/namespaces", auth, ""), 405, "")
	wantError(t, c.do("GET", "/v2/auth/login", "", ""), 405, "")
	if got := s.Calls(OpUnknown); got != 4 {
		t.Errorf("Calls(unknown) = %d, want 4", got)
	}
}

func TestOutage(t *testing.T) {
	s, c := newT(t, Config{})
	auth := c.login()
	ns := s.AddNamespace("a")
	s.SetOutage(true)
	wantError(t, c.do("POST", "/v2/auth/login", "", `{"username":"storageos","password":"storageos"}`), 503, MsgUnavailable)
	wantError(t, c.do("GET", "/v2/namespaces", auth, ""), 503, MsgUnavailable)
	wantError(t, c.do("DELETE", "/v2/namespaces/"+ns.ID+"?version="+ns.Version, auth, ""), 503, MsgUnavailable)
	s.SetOutage(false)
	if r := c.do("GET", "/v2/namespaces", auth, ""); r.status != 200 {
		t.Fatalf("after outage: %d", r.status)
	}
	if _, ok := s.Namespace("a"); !ok {
		t.Error("outage DELETE removed the namespace")
	}
	want := map[string]int{OpLogin: 2, OpListNamespaces: 2, OpDeleteNamespace: 1}
	for op, n := range want {
		if got := s.Calls(op); got != n {
			t.Errorf("Calls(%s) = %d, want %d", op, got, n)
		}
	}
	s.ResetCalls()
	if got := s.Calls(OpLogin); got != 0 {
		t.Errorf("after ResetCalls: %d", got)
	}
}

func TestBlockReleasesOnClientGiveUpAndRelease(t *testing.T) {
	s, c := newT(t, Config{})
	auth := c.login()
	release := s.Block()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.srv.URL+"/v2/namespaces", nil)
	req.Header.Set("Authorization", auth)
	if resp, err := c.srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("blocked request completed")
	}

	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("GET", c.srv.URL+"/v2/namespaces", nil)
		req.Header.Set("Authorization", auth)
		resp, err := c.srv.Client().Do(req)
		if err != nil {
			done <- result{}
			return
		}
		defer resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	release()
	release() // idempotent
	if r := <-done; r.status != 200 {
		t.Fatalf("released request: %d", r.status)
	}
	if got := s.Calls(OpListNamespaces); got != 2 {
		t.Errorf("Calls(list) = %d, want 2", got)
	}
}

func TestStart(t *testing.T) {
	s := New(Config{})
	base, stop, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("URL = %q", base)
	}
	resp, err := http.Post(base+"/v2/auth/login", "application/json", strings.NewReader(`{"username":"storageos","password":"storageos"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("login via Start: %d", resp.StatusCode)
	}
	auth := resp.Header.Get("Authorization")

	// A request blocked at stop time is answered, not left hanging.
	s.Block()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("GET", base+"/v2/namespaces", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); s.Calls(OpListNamespaces) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // wait until the request is inside the handler
			t.Fatal("the blocked request never reached the handler")
		}
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := <-errc; err != nil {
		t.Logf("the blocked request ended with %v (answered or cut: either is fine)", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if resp, err := http.Get(base + "/v2/namespaces"); err == nil {
		_ = resp.Body.Close()
		t.Error("server still answers after stop")
	}
	if _, _, err := New(Config{}).Start("256.0.0.1:1"); err == nil {
		t.Error("Start on a bad address succeeded")
	}
}

func TestConcurrentUse(t *testing.T) {
	s, c := newT(t, Config{})
	auth := c.login()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := "ns-" + string(rune('a'+i))
			s.AddNamespace(name)
			_ = s.SetVolumes(name, 1)
			_, _ = s.SetLabels(name, map[string]string{"i": name})
			_ = s.SetVolumes(name, 0)
			ns, _ := s.Namespace(name)
			c.do("GET", "/v2/namespaces", auth, "")
			r := c.do("DELETE", "/v2/namespaces/"+ns.ID+"?version="+url.QueryEscape(ns.Version), auth, "")
			if r.status != 200 {
				t.Errorf("delete %s: %d %s", name, r.status, r.body)
			}
			_ = s.Namespaces()
			_ = s.Calls(OpListNamespaces)
		})
	}
	wg.Wait()
	if got := len(s.Namespaces()); got != 1 {
		t.Errorf("%d namespaces left, want only default", got)
	}
}
