package storageossim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/limbo-dev/limbo/pkg/simhttp"
)

// Operation names, as counted by Calls.
const (
	OpLogin           = "login"
	OpRefresh         = "refresh"
	OpListNamespaces  = "list_namespaces"
	OpCreateNamespace = "create_namespace"
	OpGetNamespace    = "get_namespace"
	OpDeleteNamespace = "delete_namespace"
	// OpUnknown counts requests that match no route. They get 404, or 405
	// for a known path with an unsupported method.
	OpUnknown = "unknown"
)

// Error messages used in {"error": …} bodies. Where the StorageOS OpenAPI
// document gives an example, these follow it.
const (
	MsgAuthRequired = "authentication required"
	MsgNotFound     = "not found"
	MsgInUse        = "in use"
	MsgStale        = "attempting to write stale object"
	MsgExists       = "already exists"
	MsgUnavailable  = "store unavailable: the server is currently unable to handle the request due to a temporary store failure"
)

// DefaultNamespace is the namespace that exists at start.
const DefaultNamespace = "default"

// Config configures a Server. The zero value is usable.
type Config struct {
	// Username and Password are the accepted credentials. Both default to
	// "storageos".
	Username string
	Password string
	// TokenTTL is how long an issued JWT stays valid. It is sent in
	// Authorization-Expires-Seconds. Default: 5 minutes.
	TokenTTL time.Duration
	// OmitBearerPrefix sends the login/refresh Authorization response header
	// as the bare JWT instead of "Bearer <jwt>", to exercise clients that
	// must handle both.
	OmitBearerPrefix bool
	// StaleVersionConflict answers a DELETE with a stale version 409 Conflict
	// {"error":"attempting to write stale object"} instead of 412. StorageOS's
	// OpenAPI document says both for DELETE /namespaces/{id}: 409 in the text of
	// its version parameter, 412 in its responses (409 there is "in use").
	StaleVersionConflict bool
	// Now is the clock, used for token expiry and timestamps. Default:
	// time.Now.
	Now func() time.Time
}

// Namespace is a simulated namespace. The JSON encoding is the wire shape;
// Volumes is simulator state and is not serialised.
type Namespace struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
	Version   string            `json:"version"`
	// Volumes is the number of volumes in the namespace. While it is above
	// zero, DELETE returns 409 "in use".
	Volumes int `json:"-"`
}

func (n *Namespace) clone() Namespace {
	c := *n
	c.Labels = maps.Clone(n.Labels)
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	return c
}

// Server is the simulator. It implements http.Handler.
type Server struct {
	cfg    Config
	secret []byte
	userID string

	mu         sync.Mutex
	username   string
	password   string
	tokens     map[string]time.Time // issued JWT → expiry
	byID       map[string]*Namespace
	byName     map[string]*Namespace
	revision   uint64
	outage     bool
	block      chan struct{} // nil unless Block is in effect
	calls      map[string]int
	stopped    chan struct{}
	stopOnce   sync.Once
	createdAt  time.Time
	tokenCount uint64
	// firstCalls is when each operation's first request came: a count alone
	// cannot tell a delete at its deadline from one before it.
	firstCalls map[string]time.Time
}

// New returns a simulator holding only the "default" namespace.
func New(cfg Config) *Server {
	if cfg.Username == "" {
		cfg.Username = "storageos"
	}
	if cfg.Password == "" {
		cfg.Password = "storageos"
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{
		cfg:      cfg,
		secret:   simhttp.RandomBytes(32),
		userID:   simhttp.NewUUID(),
		username: cfg.Username,
		password: cfg.Password,
		tokens:   map[string]time.Time{},
		byID:     map[string]*Namespace{},
		byName:   map[string]*Namespace{},
		calls:    map[string]int{},
		stopped:  make(chan struct{}),
	}
	s.createdAt = s.now()
	s.firstCalls = map[string]time.Time{}
	s.mu.Lock()
	s.addLocked(DefaultNamespace, nil)
	s.mu.Unlock()
	return s
}

// Start serves the simulator on addr (for example "127.0.0.1:5705"; empty
// means "127.0.0.1:0", a free port). It returns the base URL to use as the
// client endpoint, such as "http://127.0.0.1:5705", and a stop function. Stop
// releases blocked requests, shuts the server down gracefully for up to 5s,
// then closes it. Calling stop more than once is safe.
func (s *Server) Start(addr string) (string, func() error, error) {
	return simhttp.Serve("storageossim", s, addr, func() { s.stopOnce.Do(func() { close(s.stopped) }) })
}

// ---- test controls ----

// AddNamespace creates a namespace called name, with no volumes, and returns
// it. If one already exists it is returned unchanged.
func (s *Server) AddNamespace(name string) Namespace {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns, ok := s.byName[name]; ok {
		return ns.clone()
	}
	return s.addLocked(name, nil).clone()
}

// SetVolumes sets the number of volumes held by the namespace called name.
// Volumes are separate entities, so the namespace's version does not change.
func (s *Server) SetVolumes(name string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("storageossim: no namespace %q", name)
	}
	ns.Volumes = max(n, 0)
	return nil
}

// SetLabels replaces the labels of the namespace called name. This is a
// mutation, so the version changes, and a DELETE with the old version then
// gets 412. It returns the updated namespace.
func (s *Server) SetLabels(name string, labels map[string]string) (Namespace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, ok := s.byName[name]
	if !ok {
		return Namespace{}, fmt.Errorf("storageossim: no namespace %q", name)
	}
	ns.Labels = maps.Clone(labels)
	ns.UpdatedAt = s.now()
	ns.Version = s.nextVersionLocked()
	return ns.clone(), nil
}

// Namespace returns the namespace called name.
func (s *Server) Namespace(name string) (Namespace, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, ok := s.byName[name]
	if !ok {
		return Namespace{}, false
	}
	return ns.clone(), true
}

// Namespaces returns all namespaces, sorted by name.
func (s *Server) Namespaces() []Namespace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedLocked()
}

// ExpireTokens invalidates every issued token. The next authenticated call
// gets 401 until the client logs in again.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// SetCredentials changes the accepted credentials. Issued tokens stay valid.
func (s *Server) SetCredentials(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.username, s.password = username, password
}

// SetOutage turns a simulated store outage on or off. During an outage every
// API call, login included, returns 503 with an {"error": …} body. Calls are
// still counted.
func (s *Server) SetOutage(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = on
}

// Block makes every request that arrives from now on wait, after it is
// counted, until release is called, the client gives up, or the server is
// stopped. It is for timeout tests. release is idempotent.
func (s *Server) Block() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.block = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.block == ch {
				s.block = nil
			}
			s.mu.Unlock()
			close(ch)
		})
	}
}

// Calls returns how many requests the operation has received (see the Op
// constants), whatever their outcome.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// FirstCall is when the operation's first request came (see the Op constants),
// whatever its outcome, by the simulator's clock; zero if none has since the
// start or the last ResetCalls.
func (s *Server) FirstCall(op string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstCalls[op]
}

// ResetCalls zeroes all call counters and forgets the first calls.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
	clear(s.firstCalls)
}

// ---- HTTP ----

type route struct {
	op      string
	auth    bool
	handler func(w http.ResponseWriter, r *http.Request, id string)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, status := s.route(r)

	s.mu.Lock()
	s.calls[rt.op]++
	if _, ok := s.firstCalls[rt.op]; !ok {
		s.firstCalls[rt.op] = s.now()
	}
	block := s.block
	s.mu.Unlock()

	if block != nil {
		select {
		case <-block:
		case <-r.Context().Done():
			return // the client gave up; nobody is listening
		case <-s.stopped:
			writeError(w, http.StatusServiceUnavailable, MsgUnavailable)
			return
		}
	}

	s.mu.Lock()
	outage := s.outage
	s.mu.Unlock()
	if outage {
		writeError(w, http.StatusServiceUnavailable, MsgUnavailable)
		return
	}
	if rt.handler == nil {
		if status == http.StatusMethodNotAllowed {
			writeError(w, status, "method not allowed")
			return
		}
		writeError(w, http.StatusNotFound, MsgNotFound)
		return
	}
	if rt.auth && !s.authorised(r) {
		writeError(w, http.StatusUnauthorized, MsgAuthRequired)
		return
	}
	_, id := splitNamespacePath(r.URL.EscapedPath())
	rt.handler(w, r, id)
}

// route picks the handler from method and path. If no handler applies, the
// status is 404 or 405.
func (s *Server) route(r *http.Request) (route, int) {
	path := r.URL.EscapedPath()
	switch path {
	case "/v2/auth/login":
		if r.Method == http.MethodPost {
			return route{op: OpLogin, handler: s.handleLogin}, 0
		}
		return route{op: OpUnknown}, http.StatusMethodNotAllowed
	case "/v2/auth/refresh":
		if r.Method == http.MethodPost {
			return route{op: OpRefresh, auth: true, handler: s.handleRefresh}, 0
		}
		return route{op: OpUnknown}, http.StatusMethodNotAllowed
	case "/v2/namespaces", "/v2/namespaces/":
		switch r.Method {
		case http.MethodGet:
			return route{op: OpListNamespaces, auth: true, handler: s.handleList}, 0
		case http.MethodPost:
			return route{op: OpCreateNamespace, auth: true, handler: s.handleCreate}, 0
		}
		return route{op: OpUnknown}, http.StatusMethodNotAllowed
	}
	if ok, _ := splitNamespacePath(path); ok {
		switch r.Method {
		case http.MethodGet:
			return route{op: OpGetNamespace, auth: true, handler: s.handleGet}, 0
		case http.MethodDelete:
			return route{op: OpDeleteNamespace, auth: true, handler: s.handleDelete}, 0
		}
		return route{op: OpUnknown}, http.StatusMethodNotAllowed
	}
	return route{op: OpUnknown}, http.StatusNotFound
}

// splitNamespacePath matches /v2/namespaces/{id} on the escaped path and
// returns the unescaped id. An id with an escaped "/" stays one segment.
func splitNamespacePath(escaped string) (bool, string) {
	rest, ok := strings.CutPrefix(escaped, "/v2/namespaces/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return false, ""
	}
	id, err := url.PathUnescape(rest)
	if err != nil {
		return false, ""
	}
	return true, id
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request, _ string) {
	var body struct {
		Username *string `json:"username"`
		Password *string `json:"password"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid request body: "+err.Error())
		return
	}
	if body.Username == nil || body.Password == nil {
		writeError(w, http.StatusBadRequest, "username and password are required")
		return
	}
	s.mu.Lock()
	ok := hmac.Equal([]byte(*body.Username), []byte(s.username)) &&
		hmac.Equal([]byte(*body.Password), []byte(s.password))
	var token string
	if ok {
		token = s.issueTokenLocked()
	}
	username := s.username
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusUnauthorized, MsgAuthRequired)
		return
	}
	s.writeSession(w, token, username)
}

func (s *Server) handleRefresh(w http.ResponseWriter, _ *http.Request, _ string) {
	s.mu.Lock()
	token := s.issueTokenLocked()
	username := s.username
	s.mu.Unlock()
	s.writeSession(w, token, username)
}

// writeSession writes a 200 UserSession with the token in the headers and
// the body.
func (s *Server) writeSession(w http.ResponseWriter, token, username string) {
	ttl := uint64(s.cfg.TokenTTL / time.Second)
	if ttl == 0 {
		ttl = 1
	}
	hdr := "Bearer " + token
	if s.cfg.OmitBearerPrefix {
		hdr = token
	}
	w.Header().Set("Authorization", hdr)
	w.Header().Set("Authorization-Expires-Seconds", strconv.FormatUint(ttl, 10))
	type session struct {
		ExpiresInSeconds uint64 `json:"expiresInSeconds"`
		Token            string `json:"token"`
	}
	simhttp.WriteJSON(w, http.StatusOK, struct {
		ID        string    `json:"id"`
		Username  string    `json:"username"`
		IsAdmin   bool      `json:"isAdmin"`
		Groups    []string  `json:"groups"`
		CreatedAt time.Time `json:"createdAt"`
		UpdatedAt time.Time `json:"updatedAt"`
		Version   string    `json:"version"`
		Session   session   `json:"session"`
	}{
		ID: s.userID, Username: username, IsAdmin: true, Groups: []string{},
		CreatedAt: s.createdAt, UpdatedAt: s.createdAt, Version: "MQ",
		Session: session{ExpiresInSeconds: ttl, Token: token},
	})
}

func (s *Server) handleList(w http.ResponseWriter, _ *http.Request, _ string) {
	s.mu.Lock()
	list := s.sortedLocked()
	s.mu.Unlock()
	simhttp.WriteJSON(w, http.StatusOK, list)
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request, _ string) {
	var body struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid request body: "+err.Error())
		return
	}
	if body.Name == "" {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	s.mu.Lock()
	if _, ok := s.byName[body.Name]; ok {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, MsgExists)
		return
	}
	ns := s.addLocked(body.Name, body.Labels).clone()
	s.mu.Unlock()
	simhttp.WriteJSON(w, http.StatusCreated, ns)
}

func (s *Server) handleGet(w http.ResponseWriter, _ *http.Request, id string) {
	s.mu.Lock()
	ns, ok := s.byID[id]
	var out Namespace
	if ok {
		out = ns.clone()
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, MsgNotFound)
		return
	}
	simhttp.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	ignoreVersion := false
	if v := q.Get("ignore-version"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid ignore-version: "+v)
			return
		}
		ignoreVersion = b
	}
	// The API requires version (openapi.yaml: in query, required: true), also
	// with ignore-version, which only stops it being compared.
	version := q.Get("version")
	if version == "" {
		writeError(w, http.StatusBadRequest, "version is required")
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ns, ok := s.byID[id]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, MsgNotFound)
	case !ignoreVersion && version != ns.Version && s.cfg.StaleVersionConflict:
		writeError(w, http.StatusConflict, MsgStale)
	case !ignoreVersion && version != ns.Version:
		writeError(w, http.StatusPreconditionFailed, MsgStale)
	case ns.Volumes > 0:
		writeError(w, http.StatusConflict, MsgInUse)
	default:
		delete(s.byID, ns.ID)
		delete(s.byName, ns.Name)
		w.WriteHeader(http.StatusOK)
	}
}

// ---- internals ----

func (s *Server) now() time.Time { return s.cfg.Now().UTC() }

func (s *Server) addLocked(name string, labels map[string]string) *Namespace {
	now := s.now()
	if labels == nil {
		labels = map[string]string{}
	}
	ns := &Namespace{
		ID:        simhttp.NewUUID(),
		Name:      name,
		Labels:    maps.Clone(labels),
		CreatedAt: now,
		UpdatedAt: now,
		Version:   s.nextVersionLocked(),
	}
	s.byID[ns.ID] = ns
	s.byName[ns.Name] = ns
	return ns
}

// nextVersionLocked returns a fresh opaque version token: the base64 form of
// a cluster-wide revision counter, well under the 30-character limit.
func (s *Server) nextVersionLocked() string {
	s.revision++
	return base64.RawStdEncoding.EncodeToString([]byte(strconv.FormatUint(s.revision, 10)))
}

func (s *Server) sortedLocked() []Namespace {
	out := make([]Namespace, 0, len(s.byID))
	for _, ns := range s.byID {
		out = append(out, ns.clone())
	}
	slices.SortFunc(out, func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// issueTokenLocked mints an HS256 JWT and records it as valid.
func (s *Server) issueTokenLocked() string {
	now := s.now()
	exp := now.Add(s.cfg.TokenTTL)
	s.tokenCount++
	header := b64json(map[string]string{"alg": "HS256", "typ": "JWT"})
	payload := b64json(map[string]any{
		"sub":      s.userID,
		"username": s.username,
		"iat":      now.Unix(),
		"exp":      exp.Unix(),
		"jti":      strconv.FormatUint(s.tokenCount, 10) + "-" + hex.EncodeToString(simhttp.RandomBytes(4)),
	})
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(header + "." + payload))
	token := header + "." + payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	s.tokens[token] = exp
	return token
}

// authorised checks the Authorization request header. It accepts
// "Bearer <jwt>" and also a bare "<jwt>".
func (s *Server) authorised(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get("Authorization"))
	if len(v) >= 7 && strings.EqualFold(v[:7], "bearer ") {
		v = strings.TrimSpace(v[7:])
	}
	if v == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[v]
	if !ok {
		return false
	}
	if !s.now().Before(exp) {
		delete(s.tokens, v)
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	simhttp.WriteJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

func b64json(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}
