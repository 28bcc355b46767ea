package openstacksim

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/limbo-dev/limbo/pkg/simhttp"
)

// Operation names, as recorded in the call log.
const (
	OpIdentityVersion   = "identity_version"
	OpCreateToken       = "create_token"
	OpNetworkVersions   = "network_versions"
	OpListExtensions    = "list_extensions"
	OpGetExtension      = "get_extension"
	OpGetRouter         = "get_router"
	OpUpdateRouter      = "update_router"
	OpAddExtraRoutes    = "add_extraroutes"
	OpRemoveExtraRoutes = "remove_extraroutes"
	OpComputeVersions   = "compute_versions"
	OpComputeVersion    = "compute_version" // the v2.1 endpoint's own version document
	OpListServers       = "list_servers"
	OpCreateServer      = "create_server"
	OpDeleteServer      = "delete_server"
	OpListPorts         = "list_ports"
	// OpUnknown is a request that matches no route: 404, or 405 for a known
	// path with another method.
	OpUnknown = "unknown"
)

// Services, the first segment of every path; SetOutage takes one.
const (
	ServiceIdentity = "identity"
	ServiceNetwork  = "network"
	ServiceCompute  = "compute"
)

// Defaults of Config.
const (
	DefaultUsername       = "admin"
	DefaultPassword       = "secret"
	DefaultUserDomainName = "Default"
	DefaultProjectID      = "0c4e939acacf4376bdcd1129f1a054ad"
	DefaultAppCredID      = "4f4bb2c1b6a34b2b8c2c6e8d9a8e4a11"
	DefaultAppCredSecret  = "app-cred-secret"
	DefaultRegion         = "RegionOne"
	DefaultMaxRoutes      = 30
	DefaultMaxLimit       = 1000
	// DefaultComputeMaxVersion is the maximum compute microversion, as a
	// current Nova reports it.
	DefaultComputeMaxVersion = "2.95"
	// DefaultCell is the cell of a server that names none.
	DefaultCell = "cell1"
)

// MicroversionDownCells is the compute microversion from which Nova lists a
// down cell's servers as stubs with status UNKNOWN instead of leaving them out.
const MicroversionDownCells = "2.69"

// ExtensionAtomicExtraRoutes is the alias of Neutron's extraroute-atomic
// extension.
const ExtensionAtomicExtraRoutes = "extraroute-atomic"

// ExtensionRevisionIfMatch is the alias of Neutron's revision-if-match
// extension: an update's If-Match: revision_number=N is honoured.
const ExtensionRevisionIfMatch = "revision-if-match"

// Config configures a Server. The zero value is usable.
type Config struct {
	// Accepted password credentials: user name (in UserDomainName) and
	// password, scoped to ProjectID.
	Username, Password, UserDomainName, ProjectID string
	// Accepted application credential.
	ApplicationCredentialID, ApplicationCredentialSecret string
	// Admin gives the credentials' user the admin role (on ProjectID): as
	// Neutron's default policy does, it sees and updates the routers of every
	// project. Without it, a router of another project (SetRouterProject) is
	// not found (404), as Neutron hides it.
	Admin bool
	// Region of the catalog's endpoints.
	Region string
	// CatalogRegions lists, by service type (ServiceIdentity, ServiceNetwork,
	// ServiceCompute), the regions of the service's endpoints in the catalog,
	// in the catalog's order; a service not named has Region only. Region's
	// endpoint is at the service's own path (/network), another region's at
	// /regions/<region>/network. Every region serves the same routers and
	// servers: Call.Region tells which region's endpoint a request used.
	CatalogRegions map[string][]string
	// TokenTTL is how long a token is valid; default 1h.
	TokenTTL time.Duration
	// WithoutAtomicExtraRoutes starts Neutron without extraroute-atomic (a
	// cloud older than Ussuri): only the revision-guarded whole-list update.
	WithoutAtomicExtraRoutes bool
	// WithoutRevisionIfMatch starts Neutron without the revision-if-match
	// extension (no revisions service plugin): it is not listed, and an
	// update's If-Match header is ignored, as Neutron ignores it then.
	WithoutRevisionIfMatch bool
	// MaxRoutes is Neutron's max_routes; default 30.
	MaxRoutes int
	// MaxLimit is Nova's [api] max_limit (osapi_max_limit before Rocky), the
	// largest page: it caps a request's limit, and is the page of a request
	// without one; default 1000. A full page links the next (servers_links).
	MaxLimit int
	// ComputeMaxVersion is the highest compute microversion Nova accepts and
	// its version documents report, "2.N"; default DefaultComputeMaxVersion.
	// Below MicroversionDownCells it models a cloud older than Stein, which
	// cannot show a down cell's servers at all.
	ComputeMaxVersion string
	// FailListingOnDownCell is Nova's `[api] list_records_by_skipping_down_cells
	// = false`: while a cell is down, a server listing that gets no stubs of its
	// servers (below MicroversionDownCells, or with a paging, sorting or filter
	// parameter: see SetCellDown) answers 500 instead of leaving them out.
	FailListingOnDownCell bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnRoutesChanged, when set, is told of every change of a router's routes,
	// by the API or by the test's own calls, with the routes before and after,
	// at the moment of the change. It is called with the simulator locked: it
	// must not call the Server.
	OnRoutesChanged func(routerID string, before, after []Route)
}

// Address is a server address as Nova lists it.
type Address struct {
	Addr string `json:"addr"`
	// Type is "fixed" or "floating"; default fixed.
	Type string `json:"OS-EXT-IPS:type"`
}

// NovaServer is a simulated Nova server.
type NovaServer struct {
	ID     string
	Name   string
	Status string // default ACTIVE
	// Addresses by network name.
	Addresses map[string][]Address
	// InfoCacheEmpty: Nova lists the server with "addresses": {} though its
	// Neutron ports have them (its network info cache was emptied).
	InfoCacheEmpty bool
	Cell           string // the Nova cell that holds it; default DefaultCell
	created        time.Time
	seq            int
}

// Route is a router's static route, in Neutron's JSON shape.
type Route struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

// Router is a simulated Neutron router.
type Router struct {
	ID   string
	Name string
	// ProjectID is the project that owns it; empty is Config.ProjectID.
	ProjectID      string
	Routes         []Route
	RevisionNumber int
	updated        time.Time
	created        time.Time
}

// Call is one request, as recorded in the call log.
type Call struct {
	Op     string
	Method string
	Path   string // with the query, without a /regions/<region> prefix
	// Region is the region of the endpoint the request used (see
	// Config.CatalogRegions).
	Region string
	// IfMatch is the If-Match request header, where one was sent.
	IfMatch string
	Status  int
	// Microversion is the compute microversion the request asked for, as sent
	// ("2.69", "latest"); empty when it asked for none.
	Microversion string
	// Time is when the request arrived (by the simulator's clock).
	Time time.Time
}

// Fault is an injected error: the next Times requests of an operation, after
// Skip of them succeeded, get Status with the service's error body (a 429 or 413
// as Nova's overLimit), and the Retry-After header RetryAfter when it is set.
type Fault struct {
	Status     int
	Times      int
	Skip       int
	RetryAfter string
}

// Server is the simulator. It implements http.Handler.
type Server struct {
	cfg Config

	mu         sync.Mutex
	tokens     map[string]time.Time
	routers    map[string]*Router
	servers    map[string]*NovaServer
	serverSeq  int
	atomic     bool
	downCells  map[string]bool
	outage     map[string]bool
	faults     map[string]*Fault
	before     map[string][]func()
	calls      []Call
	userID     string
	appCredUID string
}

// New returns a simulator with no routers and no servers.
func New(cfg Config) *Server {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&cfg.Username, DefaultUsername)
	def(&cfg.Password, DefaultPassword)
	def(&cfg.UserDomainName, DefaultUserDomainName)
	def(&cfg.ProjectID, DefaultProjectID)
	def(&cfg.ApplicationCredentialID, DefaultAppCredID)
	def(&cfg.ApplicationCredentialSecret, DefaultAppCredSecret)
	def(&cfg.Region, DefaultRegion)
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = time.Hour
	}
	if cfg.MaxRoutes <= 0 {
		cfg.MaxRoutes = DefaultMaxRoutes
	}
	if cfg.MaxLimit <= 0 {
		cfg.MaxLimit = DefaultMaxLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	def(&cfg.ComputeMaxVersion, DefaultComputeMaxVersion)
	if _, ok := parseMicroversion(cfg.ComputeMaxVersion); !ok {
		panic(fmt.Sprintf("openstacksim: ComputeMaxVersion %q is not a microversion 2.N", cfg.ComputeMaxVersion))
	}
	return &Server{
		cfg: cfg, tokens: map[string]time.Time{}, routers: map[string]*Router{}, servers: map[string]*NovaServer{},
		atomic: !cfg.WithoutAtomicExtraRoutes, downCells: map[string]bool{}, outage: map[string]bool{}, faults: map[string]*Fault{},
		before: map[string][]func(){}, userID: newID(), appCredUID: newID(),
	}
}

// Config returns the effective configuration (defaults filled in): the
// credentials to use, as SetCredentials and SetApplicationCredentialSecret left
// them.
func (s *Server) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Start serves the simulator on addr ("" is a free local port) and returns its
// base URL (Keystone is at base+"/identity/v3") and a stop function, which
// shuts the server down; calling it twice is safe.
func (s *Server) Start(addr string) (string, func() error, error) {
	return simhttp.Serve("openstacksim", s, addr, nil)
}

// AuthURL is Keystone's v3 endpoint of a simulator served at base.
func AuthURL(base string) string { return base + "/identity/v3" }

// ---- test controls ----

// AddRouter creates a router (a new ID when id is empty) with routes, at
// revision 1, and returns it.
func (s *Server) AddRouter(id, name string, routes ...Route) Router {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		id = simhttp.NewUUID()
	}
	now := s.now()
	r := &Router{ID: id, Name: name, Routes: slices.Clone(routes), RevisionNumber: 1, created: now, updated: now}
	s.routers[id] = r
	return r.clone()
}

// Router returns the router with id.
func (s *Server) Router(id string) (Router, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return Router{}, false
	}
	return r.clone(), true
}

// SetRoutes replaces a router's routes as another client would (the cloud
// provider's route controller), bumping its revision.
func (s *Server) SetRoutes(id string, routes ...Route) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return fmt.Errorf("openstacksim: no router %s", id)
	}
	s.changeLocked(r, slices.Clone(routes))
	return nil
}

// SetRouterProject gives a router to another project (its project_id and
// tenant_id): only an Admin sees it then.
func (s *Server) SetRouterProject(id, projectID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return fmt.Errorf("openstacksim: no router %s", id)
	}
	r.ProjectID = projectID
	return nil
}

// AddRoutes adds routes as another client would, bumping the revision.
func (s *Server) AddRoutes(id string, routes ...Route) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok {
		return fmt.Errorf("openstacksim: no router %s", id)
	}
	s.changeLocked(r, union(r.Routes, routes))
	return nil
}

// AddServer creates an ACTIVE server (a new ID when srv.ID is empty) and
// returns it. Servers are listed newest first, as Nova does.
func (s *Server) AddServer(srv NovaServer) NovaServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv.ID == "" {
		srv.ID = simhttp.NewUUID()
	}
	if srv.Status == "" {
		srv.Status = "ACTIVE"
	}
	if srv.Cell == "" {
		srv.Cell = DefaultCell
	}
	s.serverSeq++
	srv.seq, srv.created = s.serverSeq, s.now()
	c := srv.clone()
	s.servers[srv.ID] = &c
	return c.clone()
}

// AddServerAt adds an ACTIVE server called name with fixed addresses on one
// network, "cluster-net".
func (s *Server) AddServerAt(name string, addrs ...string) NovaServer {
	var list []Address
	for _, a := range addrs {
		list = append(list, Address{Addr: a})
	}
	return s.AddServer(NovaServer{Name: name, Addresses: map[string][]Address{"cluster-net": list}})
}

// DeleteServer removes a server; it reports whether there was one.
func (s *Server) DeleteServer(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.servers[id]
	delete(s.servers, id)
	return ok
}

// SetAtomic enables or disables the extraroute-atomic extension.
func (s *Server) SetAtomic(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.atomic = on
}

// SetCellDown takes a Nova cell down or brings it back. While it is down, the
// server listing shows its servers as stubs with status UNKNOWN and no
// addresses to a request at MicroversionDownCells or above that has no query
// parameter but all_tenants, and otherwise leaves them out and still answers
// 200 (or 500 with Config.FailListingOnDownCell), as Nova does
// (servers.py _is_cell_down_supported): a stub has nothing to sort, filter or
// page by, so limit, marker, sort_key, sort_dir or any filter turn the stubs
// off, also at 2.69. Every page after the first is such a request: its
// servers_links href carries a marker.
func (s *Server) SetCellDown(cell string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downCells[cell] = down
}

// SetOutage makes every request to service (ServiceIdentity, ServiceNetwork,
// ServiceCompute; "" for all three) answer 503 while on.
func (s *Server) SetOutage(service string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, svc := range []string{ServiceIdentity, ServiceNetwork, ServiceCompute} {
		if service == "" || service == svc {
			s.outage[svc] = on
		}
	}
}

// Inject makes requests of op fail as f says (replacing an earlier fault).
func (s *Server) Inject(op string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := f
	s.faults[op] = &c
}

// Before runs hook once, just before the next request of op is handled (after
// authentication), for example to change a router between a client's read and
// its write. Hooks queue up in order.
func (s *Server) Before(op string, hook func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before[op] = append(s.before[op], hook)
}

// ExpireTokens invalidates every issued token.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// SetCredentials changes the accepted user name and password (a password
// rotated in Keystone, or reset by an admin) and revokes every issued token, as
// Keystone revokes a user's tokens when its password changes: a client still
// holding the old password gets 401 to its next call and to its
// re-authentication.
func (s *Server) SetCredentials(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Username, s.cfg.Password = username, password
	clear(s.tokens)
}

// SetApplicationCredentialSecret changes the accepted application credential's
// secret and revokes every issued token. Keystone cannot change a secret: this
// stands for the application credential deleted (or expired) and one made anew,
// whose tokens Keystone revokes with it; a client still holding the old secret
// gets 401 to its next call and to its re-authentication.
func (s *Server) SetApplicationCredentialSecret(secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.ApplicationCredentialSecret = secret
	clear(s.tokens)
}

// Calls returns the call log, oldest first; with ops, only those operations.
func (s *Server) Calls(ops ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(ops) == 0 || slices.Contains(ops, c.Op) {
			out = append(out, c)
		}
	}
	return out
}

// Count is the number of calls of op.
func (s *Server) Count(op string) int { return len(s.Calls(op)) }

// ResetCalls empties the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// ---- HTTP ----

type handler func(w http.ResponseWriter, r *http.Request, base, id string)

type route struct {
	op, service string
	auth        bool
	h           handler
	id          string
	status      int // 404 or 405 when h is nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base, region := "http://"+r.Host, s.cfg.Region
	if rest, ok := strings.CutPrefix(r.URL.Path, regionsPrefix); ok {
		// Another region's endpoint (Config.CatalogRegions): the same services,
		// whose links stay in that region.
		name, path, _ := strings.Cut(rest, "/")
		region, base = name, base+regionsPrefix+name
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = "/"+path, ""
	}
	rt := s.route(r)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	arrived := s.now()
	requested := requestedMicroversion(r)
	defer func() {
		s.mu.Lock()
		s.calls = append(s.calls, Call{Op: rt.op, Method: r.Method, Path: r.URL.RequestURI(), Region: region, IfMatch: r.Header.Get("If-Match"),
			Microversion: requested, Status: rec.status, Time: arrived})
		s.mu.Unlock()
	}()

	s.mu.Lock()
	outage := s.outage[rt.service]
	s.mu.Unlock()
	switch {
	case outage:
		writeServiceError(rec, rt.service, http.StatusServiceUnavailable, "The server is currently unavailable. Please try again at a later time.")
		return
	case rt.h == nil:
		writeServiceError(rec, rt.service, rt.status, http.StatusText(rt.status))
		return
	case rt.auth && !s.authorised(r):
		writeServiceError(rec, rt.service, http.StatusUnauthorized, "The request you have made requires authentication.")
		return
	case rt.service == ServiceCompute && rt.auth && !s.acceptMicroversion(rec, requested):
		return
	}
	// A fault is taken by the first request that reaches the operation: one
	// refused before (401, a microversion) does not use it up unanswered.
	s.mu.Lock()
	fault, retryAfter := s.takeFaultLocked(rt.op)
	s.mu.Unlock()
	if fault != 0 {
		if retryAfter != "" {
			rec.Header().Set("Retry-After", retryAfter)
		}
		writeServiceError(rec, rt.service, fault, "injected failure")
		return
	}
	s.runHooks(rt.op)
	rt.h(rec, r, base, rt.id)
}

// regionsPrefix is the path prefix of another region's endpoints.
const regionsPrefix = "/regions/"

func (s *Server) route(r *http.Request) route {
	path := strings.TrimSuffix(r.URL.EscapedPath(), "/")
	service, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	get, put := r.Method == http.MethodGet, r.Method == http.MethodPut
	match := func(ok bool, op string, auth bool, h handler, id string) route {
		if !ok {
			return route{op: OpUnknown, service: service, status: http.StatusMethodNotAllowed}
		}
		return route{op: op, service: service, auth: auth, h: h, id: id}
	}
	segs := strings.Split(rest, "/")
	switch service {
	case ServiceIdentity:
		switch rest {
		case "v3":
			return match(get, OpIdentityVersion, false, s.handleIdentityVersion, "")
		case "v3/auth/tokens":
			return match(r.Method == http.MethodPost, OpCreateToken, false, s.handleCreateToken, "")
		}
	case ServiceNetwork:
		switch {
		case rest == "":
			return match(get, OpNetworkVersions, false, s.handleNetworkVersions, "")
		case rest == "v2.0/extensions":
			return match(get, OpListExtensions, true, s.handleListExtensions, "")
		case len(segs) == 3 && segs[0] == "v2.0" && segs[1] == "extensions":
			return match(get, OpGetExtension, true, s.handleGetExtension, segs[2])
		case len(segs) == 3 && segs[0] == "v2.0" && segs[1] == "routers":
			if get {
				return match(true, OpGetRouter, true, s.handleGetRouter, segs[2])
			}
			return match(put, OpUpdateRouter, true, s.handleUpdateRouter, segs[2])
		case len(segs) == 4 && segs[0] == "v2.0" && segs[1] == "routers" && segs[3] == "add_extraroutes":
			return match(put, OpAddExtraRoutes, true, s.extraRoutes(union), segs[2])
		case len(segs) == 4 && segs[0] == "v2.0" && segs[1] == "routers" && segs[3] == "remove_extraroutes":
			return match(put, OpRemoveExtraRoutes, true, s.extraRoutes(difference), segs[2])
		case rest == "v2.0/ports":
			return match(get, OpListPorts, true, s.handleListPorts, "")
		}
	case ServiceCompute:
		switch {
		case rest == "":
			return match(get, OpComputeVersions, false, s.handleComputeVersions, "")
		case rest == "v2.1":
			return match(get, OpComputeVersion, false, s.handleComputeVersion, "")
		case rest == "v2.1/servers/detail":
			return match(get, OpListServers, true, s.handleListServers, "")
		case rest == "v2.1/servers":
			return match(r.Method == http.MethodPost, OpCreateServer, true, s.handleCreateServer, "")
		case len(segs) == 3 && segs[0] == "v2.1" && segs[1] == "servers":
			return match(r.Method == http.MethodDelete, OpDeleteServer, true, s.handleDeleteServer, segs[2])
		}
	}
	return route{op: OpUnknown, service: service, status: http.StatusNotFound}
}

func (s *Server) takeFaultLocked(op string) (status int, retryAfter string) {
	f := s.faults[op]
	if f == nil || f.Times <= 0 {
		return 0, ""
	}
	if f.Skip > 0 {
		f.Skip--
		return 0, ""
	}
	f.Times--
	return f.Status, f.RetryAfter
}

func (s *Server) runHooks(op string) {
	s.mu.Lock()
	hooks := s.before[op]
	var hook func()
	if len(hooks) > 0 {
		hook, s.before[op] = hooks[0], hooks[1:]
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
}

// ---- Keystone ----

func (s *Server) handleIdentityVersion(w http.ResponseWriter, _ *http.Request, base, _ string) {
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"version": map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []map[string]string{{"rel": "self", "href": AuthURL(base) + "/"}},
		"media-types": []map[string]string{{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}})
}

type tokenRequest struct {
	Auth *struct {
		Identity *struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User *struct {
					ID       string `json:"id"`
					Name     string `json:"name"`
					Password string `json:"password"`
					Domain   *struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"domain"`
				} `json:"user"`
			} `json:"password"`
			ApplicationCredential *struct {
				ID     string `json:"id"`
				Secret string `json:"secret"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope *struct {
			Project *struct {
				ID string `json:"id"`
			} `json:"project"`
		} `json:"scope"`
	} `json:"auth"`
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request, _, _ string) {
	var req tokenRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Auth == nil || req.Auth.Identity == nil || len(req.Auth.Identity.Methods) != 1 {
		writeServiceError(w, ServiceIdentity, http.StatusBadRequest, "Expecting to find identity in auth.")
		return
	}
	id := req.Auth.Identity
	method := id.Methods[0]
	// The credentials as the test left them (SetCredentials,
	// SetApplicationCredentialSecret).
	cfg := s.Config()
	ok := false
	switch method {
	case "password":
		if id.Password == nil || id.Password.User == nil {
			writeServiceError(w, ServiceIdentity, http.StatusBadRequest, "Expecting to find user in password.")
			return
		}
		u := id.Password.User
		userOK := u.ID == s.userID || (u.Name == cfg.Username && u.Domain != nil && (u.Domain.Name == cfg.UserDomainName || u.Domain.ID == strings.ToLower(cfg.UserDomainName)))
		scopeOK := req.Auth.Scope != nil && req.Auth.Scope.Project != nil && req.Auth.Scope.Project.ID == cfg.ProjectID
		ok = userOK && u.Password == cfg.Password && scopeOK
	case "application_credential":
		ac := id.ApplicationCredential
		ok = ac != nil && ac.ID == cfg.ApplicationCredentialID && ac.Secret == cfg.ApplicationCredentialSecret
	default:
		writeServiceError(w, ServiceIdentity, http.StatusBadRequest, "Unsupported authentication method: "+method)
		return
	}
	if !ok {
		writeServiceError(w, ServiceIdentity, http.StatusUnauthorized, "The request you have made requires authentication.")
		return
	}
	now := s.now()
	expires := now.Add(s.cfg.TokenTTL)
	token := "gAAAAA" + hex.EncodeToString(simhttp.RandomBytes(24))
	s.mu.Lock()
	s.tokens[token] = expires
	s.mu.Unlock()

	domain := map[string]string{"id": strings.ToLower(s.cfg.UserDomainName), "name": s.cfg.UserDomainName}
	body := map[string]any{
		"methods":    []string{method},
		"user":       map[string]any{"id": s.userID, "name": cfg.Username, "domain": domain, "password_expires_at": nil},
		"audit_ids":  []string{hex.EncodeToString(simhttp.RandomBytes(8))},
		"issued_at":  now.Format("2006-01-02T15:04:05.000000Z"),
		"expires_at": expires.Format("2006-01-02T15:04:05.000000Z"),
		"project":    map[string]any{"id": s.cfg.ProjectID, "name": "cluster", "domain": domain},
		"is_domain":  false,
		"roles":      s.roles(),
		"catalog":    s.catalog("http://" + r.Host), // the root, also when asked through another region
	}
	if method == "application_credential" {
		body["application_credential"] = map[string]any{"id": s.cfg.ApplicationCredentialID, "name": "route-gc", "restricted": true}
	}
	w.Header().Set("X-Subject-Token", token)
	simhttp.WriteJSON(w, http.StatusCreated, map[string]any{"token": body})
}

// roles are the roles of the credentials' user on its project.
func (s *Server) roles() []map[string]string {
	roles := []map[string]string{{"id": "9fe2ff9ee4384b1894a90878d3e92bab", "name": "member"}}
	if s.cfg.Admin {
		roles = append(roles, map[string]string{"id": "d3c1a3f6b0e54b2b9c4e8f7a6b5c4d3e", "name": "admin"})
	}
	return roles
}

func (s *Server) catalog(base string) []map[string]any {
	entry := func(typ, name, path string) map[string]any {
		regions := s.cfg.CatalogRegions[typ]
		if len(regions) == 0 {
			regions = []string{s.cfg.Region}
		}
		var eps []map[string]string
		for _, region := range regions {
			url := base + path
			if region != s.cfg.Region {
				url = base + regionsPrefix + region + path
			}
			for _, iface := range []string{"public", "internal", "admin"} {
				eps = append(eps, map[string]string{"id": newID(), "interface": iface, "region": region, "region_id": region, "url": url})
			}
		}
		return map[string]any{"id": newID(), "type": typ, "name": name, "endpoints": eps}
	}
	return []map[string]any{
		entry(ServiceIdentity, "keystone", "/identity/v3"),
		entry(ServiceNetwork, "neutron", "/network"),
		entry(ServiceCompute, "nova", "/compute/v2.1"),
	}
}

func (s *Server) authorised(r *http.Request) bool {
	token := r.Header.Get("X-Auth-Token")
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[token]
	if ok && !s.now().Before(exp) {
		delete(s.tokens, token)
		return false
	}
	return ok
}

// ---- Neutron ----

func (s *Server) handleNetworkVersions(w http.ResponseWriter, _ *http.Request, base, _ string) {
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{{
		"id": "v2.0", "status": "CURRENT",
		"links": []map[string]string{{"rel": "self", "href": base + "/network/v2.0/"}},
	}}})
}

func (s *Server) extensions() []map[string]any {
	ext := func(alias, name, desc string) map[string]any {
		return map[string]any{"alias": alias, "name": name, "description": desc, "updated": "2020-01-01T10:00:00-00:00", "links": []any{}}
	}
	out := []map[string]any{
		ext("router", "Neutron L3 Router", "Router abstraction for layer 3 forwarding."),
		ext("extraroute", "Neutron Extra Route", "Extra routes configuration for L3 router"),
		ext("standard-attr-revisions", "Resource revision numbers", "This extension will display the revision number of neutron resources."),
	}
	if !s.cfg.WithoutRevisionIfMatch {
		out = append(out, ext(ExtensionRevisionIfMatch, "If-Match constraints based on revision_number", "Extension indicating that If-Match based on revision_number is supported."))
	}
	s.mu.Lock()
	atomic := s.atomic
	s.mu.Unlock()
	if atomic {
		out = append(out, ext(ExtensionAtomicExtraRoutes, "Atomically add/remove extra routes", "Edit extra routes of a router on server side by atomically adding/removing extra routes"))
	}
	return out
}

func (s *Server) handleListExtensions(w http.ResponseWriter, _ *http.Request, _, _ string) {
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"extensions": s.extensions()})
}

func (s *Server) handleGetExtension(w http.ResponseWriter, _ *http.Request, _, alias string) {
	for _, e := range s.extensions() {
		if e["alias"] == alias {
			simhttp.WriteJSON(w, http.StatusOK, map[string]any{"extension": e})
			return
		}
	}
	writeServiceError(w, ServiceNetwork, http.StatusNotFound, fmt.Sprintf("Extension with alias %s does not exist", alias))
}

func (s *Server) handleGetRouter(w http.ResponseWriter, _ *http.Request, _, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.routers[id]
	if !ok || !s.visibleLocked(r) {
		writeNeutronError(w, http.StatusNotFound, "RouterNotFound", fmt.Sprintf("Router %s could not be found", id))
		return
	}
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"router": s.routerJSON(r)})
}

// readRoutes decodes {"router":{"routes":[…]}} and validates each route as
// Neutron does.
func readRoutes(w http.ResponseWriter, r *http.Request) ([]Route, bool) {
	var body struct {
		Router *struct {
			Routes *[]Route `json:"routes"`
		} `json:"router"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil || body.Router == nil || body.Router.Routes == nil {
		writeNeutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input: expected {\"router\": {\"routes\": [...]}}")
		return nil, false
	}
	for _, rt := range *body.Router.Routes {
		_, errDst := netip.ParsePrefix(rt.Destination)
		_, errHop := netip.ParseAddr(rt.NextHop)
		if errDst != nil || errHop != nil {
			writeNeutronError(w, http.StatusBadRequest, "HTTPBadRequest", fmt.Sprintf("Invalid input for routes. Reason: '%s' is not a valid route.", rt.Destination+" via "+rt.NextHop))
			return nil, false
		}
	}
	return *body.Router.Routes, true
}

func (s *Server) handleUpdateRouter(w http.ResponseWriter, r *http.Request, _, id string) {
	routes, ok := readRoutes(w, r)
	if !ok {
		return
	}
	want, constrained, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		writeNeutronError(w, http.StatusBadRequest, "InvalidInput", err.Error())
		return
	}
	constrained = constrained && !s.cfg.WithoutRevisionIfMatch
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, found := s.routers[id]
	switch {
	case !found || !s.visibleLocked(rt):
		writeNeutronError(w, http.StatusNotFound, "RouterNotFound", fmt.Sprintf("Router %s could not be found", id))
	case constrained && rt.RevisionNumber != want:
		writeNeutronError(w, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed", fmt.Sprintf("Constrained to %d, but current revision is %d", want, rt.RevisionNumber))
	case len(routes) > s.cfg.MaxRoutes:
		writeNeutronError(w, http.StatusBadRequest, "RoutesExhausted", fmt.Sprintf("Unable to complete operation for %s. The number of routes exceeds the maximum %d.", id, s.cfg.MaxRoutes))
	default:
		s.changeLocked(rt, slices.Clone(routes))
		simhttp.WriteJSON(w, http.StatusOK, map[string]any{"router": s.routerJSON(rt)})
	}
}

// extraRoutes handles add_extraroutes and remove_extraroutes: combine computes
// the new list from the current one and the request's.
func (s *Server) extraRoutes(combine func(current, change []Route) []Route) handler {
	return func(w http.ResponseWriter, r *http.Request, _, id string) {
		s.mu.Lock()
		atomic := s.atomic
		s.mu.Unlock()
		if !atomic {
			writeNeutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
			return
		}
		routes, ok := readRoutes(w, r)
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rt, found := s.routers[id]
		if !found || !s.visibleLocked(rt) {
			writeNeutronError(w, http.StatusNotFound, "RouterNotFound", fmt.Sprintf("Router %s could not be found", id))
			return
		}
		next := combine(rt.Routes, routes)
		if len(next) > s.cfg.MaxRoutes {
			writeNeutronError(w, http.StatusBadRequest, "RoutesExhausted", fmt.Sprintf("Unable to complete operation for %s. The number of routes exceeds the maximum %d.", id, s.cfg.MaxRoutes))
			return
		}
		s.changeLocked(rt, next)
		simhttp.WriteJSON(w, http.StatusOK, map[string]any{"router": s.routerJSON(rt)})
	}
}

// parseIfMatch reads Neutron's "If-Match: revision_number=N".
func parseIfMatch(h string) (int, bool, error) {
	if h == "" {
		return 0, false, nil
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(h), "revision_number=")
	if !ok {
		return 0, false, fmt.Errorf("If-Match header %q: only revision_number=N is supported", h)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, fmt.Errorf("If-Match header %q: invalid revision number", h)
	}
	return n, true, nil
}

func (s *Server) changeLocked(r *Router, routes []Route) {
	if routes == nil {
		routes = []Route{}
	}
	if sameRoutes(r.Routes, routes) {
		return // Neutron leaves an unchanged router's revision_number alone
	}
	if s.cfg.OnRoutesChanged != nil {
		s.cfg.OnRoutesChanged(r.ID, slices.Clone(r.Routes), slices.Clone(routes))
	}
	r.Routes = routes
	r.RevisionNumber++
	r.updated = s.now()
}

// sameRoutes tells whether two route lists hold the same routes, in any order
// (Neutron keeps them as rows, not as a list).
func sameRoutes(a, b []Route) bool {
	in := map[Route]int{}
	for _, r := range a {
		in[r]++
	}
	for _, r := range b {
		in[r]--
	}
	for _, n := range in {
		if n != 0 {
			return false
		}
	}
	return true
}

// visibleLocked tells whether the credentials see router r: Neutron's policy
// shows a project's routers to its members, and every router to an admin; to
// anyone else, one of another project does not exist (404).
func (s *Server) visibleLocked(r *Router) bool {
	return s.cfg.Admin || s.routerProject(r) == s.cfg.ProjectID
}

func (s *Server) routerProject(r *Router) string {
	if r.ProjectID != "" {
		return r.ProjectID
	}
	return s.cfg.ProjectID
}

func (s *Server) routerJSON(r *Router) map[string]any {
	routes := r.Routes
	if routes == nil {
		routes = []Route{}
	}
	project := s.routerProject(r)
	return map[string]any{
		"id": r.ID, "name": r.Name, "status": "ACTIVE", "admin_state_up": true,
		"tenant_id": project, "project_id": project,
		"external_gateway_info": nil, "distributed": false, "ha": false,
		"routes": routes, "revision_number": r.RevisionNumber,
		"created_at": r.created.Format(time.RFC3339), "updated_at": r.updated.Format(time.RFC3339),
		"description": "", "tags": []string{}, "availability_zones": []string{"nova"},
	}
}

func union(current, change []Route) []Route {
	out := slices.Clone(current)
	for _, r := range change {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func difference(current, change []Route) []Route {
	out := []Route{}
	for _, r := range current {
		if !slices.Contains(change, r) {
			out = append(out, r)
		}
	}
	return out
}

// ---- Nova ----

// computeVersion is the v2.1 API in Nova's version documents: "version" is
// the maximum microversion.
func (s *Server) computeVersion(base string) map[string]any {
	return map[string]any{
		"id": "v2.1", "status": "CURRENT", "version": s.cfg.ComputeMaxVersion, "min_version": minMicroversion, "updated": "2013-07-23T11:33:21Z",
		"links": []map[string]string{{"rel": "self", "href": base + "/compute/v2.1/"}},
	}
}

func (s *Server) handleComputeVersions(w http.ResponseWriter, _ *http.Request, base, _ string) {
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{s.computeVersion(base)}})
}

func (s *Server) handleComputeVersion(w http.ResponseWriter, _ *http.Request, base, _ string) {
	v := s.computeVersion(base)
	v["media-types"] = []map[string]string{{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}}
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"version": v})
}

// minMicroversion is the lowest compute microversion, and the one a request
// that names none gets.
const minMicroversion = "2.1"

// requestedMicroversion is the compute microversion a request names, as Nova
// reads it: "OpenStack-API-Version: compute X.Y" (possibly among other
// services', comma-separated) first, then "X-OpenStack-Nova-API-Version: X.Y".
func requestedMicroversion(r *http.Request) string {
	for _, h := range r.Header.Values("OpenStack-API-Version") {
		for part := range strings.SplitSeq(h, ",") {
			if service, version, ok := strings.Cut(strings.TrimSpace(part), " "); ok && strings.EqualFold(service, ServiceCompute) {
				return strings.TrimSpace(version)
			}
		}
	}
	return strings.TrimSpace(r.Header.Get("X-OpenStack-Nova-API-Version"))
}

// servedMicroversion is the microversion a compute request is served at:
// none named is the minimum, "latest" the maximum.
func (s *Server) servedMicroversion(requested string) (microversion, bool) {
	switch requested {
	case "":
		requested = minMicroversion
	case "latest":
		requested = s.cfg.ComputeMaxVersion
	}
	return parseMicroversion(requested)
}

// acceptMicroversion answers 400 to a malformed microversion and 406 to one
// outside the supported range, as Nova does, and otherwise names the version
// served in the answer's headers.
func (s *Server) acceptMicroversion(w http.ResponseWriter, requested string) bool {
	mv, ok := s.servedMicroversion(requested)
	if !ok {
		writeServiceError(w, ServiceCompute, http.StatusBadRequest,
			fmt.Sprintf("API Version String %s is of invalid format. Must be of format MajorNum.MinorNum.", requested))
		return false
	}
	lowest, _ := parseMicroversion(minMicroversion)
	highest, _ := parseMicroversion(s.cfg.ComputeMaxVersion)
	if mv.less(lowest) || highest.less(mv) {
		writeServiceError(w, ServiceCompute, http.StatusNotAcceptable,
			fmt.Sprintf("Version %s is not supported by the API. Minimum is %s and maximum is %s.", requested, minMicroversion, s.cfg.ComputeMaxVersion))
		return false
	}
	w.Header().Set("OpenStack-API-Version", ServiceCompute+" "+mv.String())
	w.Header().Set("X-OpenStack-Nova-API-Version", mv.String())
	w.Header().Set("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
	return true
}

// microversion is a compute API microversion, 2.N.
type microversion struct{ major, minor int }

func parseMicroversion(v string) (microversion, bool) {
	major, minor, ok := strings.Cut(v, ".")
	a, errA := strconv.Atoi(major)
	b, errB := strconv.Atoi(minor)
	if !ok || errA != nil || errB != nil || a < 0 || b < 0 {
		return microversion{}, false
	}
	return microversion{a, b}, true
}

func (m microversion) less(o microversion) bool {
	return m.major < o.major || (m.major == o.major && m.minor < o.minor)
}

func (m microversion) String() string { return fmt.Sprintf("%d.%d", m.major, m.minor) }

// cellDownSupported is Nova's _is_cell_down_supported beyond the microversion:
// a down cell's servers are listed as stubs only to a request without paging
// (limit, marker), sorting (sort_key, sort_dir) or filter parameters, but for
// all_tenants. A stub has none of the fields to sort or filter by, and no
// place in a marker's order.
func cellDownSupported(q url.Values) bool {
	for k := range q {
		if k != "all_tenants" {
			return false
		}
	}
	return true
}

func (s *Server) handleListServers(w http.ResponseWriter, r *http.Request, base, _ string) {
	q := r.URL.Query()
	limit := s.cfg.MaxLimit // Nova's page without a limit (common.get_limit_and_marker)
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeServiceError(w, ServiceCompute, http.StatusBadRequest, "Invalid input for query parameters limit. Value: "+v)
			return
		}
		limit = min(n, s.cfg.MaxLimit)
	}
	served, _ := s.servedMicroversion(requestedMicroversion(r)) // accepted by ServeHTTP
	downCellStubs, _ := parseMicroversion(MicroversionDownCells)
	stubs := !served.less(downCellStubs) && cellDownSupported(q)
	s.mu.Lock()
	if !stubs && s.cfg.FailListingOnDownCell && s.anyCellDownLocked() {
		s.mu.Unlock()
		writeServiceError(w, ServiceCompute, http.StatusInternalServerError,
			"Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.\n<class 'nova.exception.NovaException'>")
		return
	}
	list := make([]*NovaServer, 0, len(s.servers))
	for _, srv := range s.servers {
		if s.downCells[srv.Cell] && !stubs {
			continue // Nova's default without stubs: a down cell's servers are left out, and the answer is still 200
		}
		list = append(list, srv)
	}
	slices.SortFunc(list, func(a, b *NovaServer) int { return b.seq - a.seq }) // newest first
	start := 0
	if marker := q.Get("marker"); marker != "" {
		i := slices.IndexFunc(list, func(srv *NovaServer) bool { return srv.ID == marker })
		if i < 0 {
			s.mu.Unlock()
			writeServiceError(w, ServiceCompute, http.StatusBadRequest, fmt.Sprintf("marker [%s] not found", marker))
			return
		}
		start = i + 1
	}
	page := list[start:min(start+limit, len(list))]
	servers := make([]map[string]any, 0, len(page))
	for _, srv := range page {
		if s.downCells[srv.Cell] {
			servers = append(servers, s.downCellServerJSON(base, srv))
			continue
		}
		servers = append(servers, s.serverJSON(base, srv))
	}
	s.mu.Unlock()
	body := map[string]any{"servers": servers}
	// Nova's _get_collection_links: a full page (of the request's limit, or of
	// max_limit without one) links the next, with the request's parameters and
	// the last server as the marker (a request without a limit links a next
	// page without one: of max_limit again).
	if limit > 0 && len(page) == limit {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("marker", page[len(page)-1].ID)
		href := base + "/compute/v2.1/servers/detail?" + next.Encode()
		body["servers_links"] = []map[string]string{{"rel": "next", "href": href}}
	}
	simhttp.WriteJSON(w, http.StatusOK, body)
}

func (s *Server) handleCreateServer(w http.ResponseWriter, r *http.Request, base, _ string) {
	var body struct {
		Server *struct {
			Name     string          `json:"name"`
			Networks json.RawMessage `json:"networks"`
		} `json:"server"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil || body.Server == nil || body.Server.Name == "" {
		writeServiceError(w, ServiceCompute, http.StatusBadRequest, "Invalid input for field/attribute server. Value: name is a required property")
		return
	}
	// networks is "auto", "none" or a list; only fixed_ip entries become addresses.
	var networks []struct {
		FixedIP string `json:"fixed_ip"`
	}
	_ = json.Unmarshal(body.Server.Networks, &networks)
	var addrs []string
	for _, n := range networks {
		if _, err := netip.ParseAddr(n.FixedIP); err == nil {
			addrs = append(addrs, n.FixedIP)
		}
	}
	srv := s.AddServerAt(body.Server.Name, addrs...)
	simhttp.WriteJSON(w, http.StatusAccepted, map[string]any{"server": map[string]any{
		"id": srv.ID, "adminPass": hex.EncodeToString(simhttp.RandomBytes(6)), "OS-DCF:diskConfig": "MANUAL",
		"security_groups": []map[string]string{{"name": "default"}},
		"links":           []map[string]string{{"rel": "self", "href": base + "/compute/v2.1/servers/" + srv.ID}},
	}})
}

func (s *Server) handleDeleteServer(w http.ResponseWriter, _ *http.Request, _, id string) {
	if !s.DeleteServer(id) {
		writeServiceError(w, ServiceCompute, http.StatusNotFound, fmt.Sprintf("Instance %s could not be found.", id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// downCellServerJSON is what Nova knows of a down cell's server (from its
// instance mapping) and lists from microversion 2.69: no name, no addresses.
func (s *Server) downCellServerJSON(base string, srv *NovaServer) map[string]any {
	return map[string]any{
		"id": srv.ID, "status": "UNKNOWN", "tenant_id": s.cfg.ProjectID, "created": srv.created.Format(time.RFC3339),
		"links": []map[string]string{
			{"rel": "self", "href": base + "/compute/v2.1/servers/" + srv.ID},
			{"rel": "bookmark", "href": base + "/compute/servers/" + srv.ID},
		},
	}
}

// handleListPorts is Neutron's GET /v2.0/ports, filtered by device_id: a server's
// ports, one per network it has a fixed address on (unfiltered: every server's).
func (s *Server) handleListPorts(w http.ResponseWriter, r *http.Request, _, _ string) {
	device := r.URL.Query().Get("device_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	ports := []map[string]any{}
	for _, srv := range s.servers {
		if device != "" && srv.ID != device {
			continue
		}
		for _, network := range slices.Sorted(maps.Keys(srv.Addresses)) {
			var ips []map[string]string
			for _, a := range srv.Addresses[network] {
				if a.Type == "" || a.Type == "fixed" {
					ips = append(ips, map[string]string{"subnet_id": network + "-subnet", "ip_address": a.Addr})
				}
			}
			if len(ips) > 0 {
				ports = append(ports, map[string]any{"id": srv.ID + "-" + network, "name": "", "network_id": network, "device_id": srv.ID,
					"device_owner": "compute:nova", "status": "ACTIVE", "admin_state_up": true, "fixed_ips": ips, "tenant_id": s.cfg.ProjectID, "project_id": s.cfg.ProjectID})
			}
		}
	}
	simhttp.WriteJSON(w, http.StatusOK, map[string]any{"ports": ports})
}

func (s *Server) serverJSON(base string, srv *NovaServer) map[string]any {
	addresses := map[string][]map[string]any{}
	for network, list := range srv.Addresses {
		if srv.InfoCacheEmpty {
			break
		}
		for _, a := range list {
			version := 4
			if ip, err := netip.ParseAddr(a.Addr); err == nil && ip.Is6() && !ip.Is4In6() {
				version = 6
			}
			typ := a.Type
			if typ == "" {
				typ = "fixed"
			}
			addresses[network] = append(addresses[network], map[string]any{
				"addr": a.Addr, "version": version, "OS-EXT-IPS:type": typ, "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01",
			})
		}
	}
	created := srv.created.Format(time.RFC3339)
	self := base + "/compute/v2.1/servers/" + srv.ID
	return map[string]any{
		"id": srv.ID, "name": srv.Name, "status": srv.Status, "tenant_id": s.cfg.ProjectID, "user_id": s.userID,
		"created": created, "updated": created, "hostId": hex.EncodeToString(simhttp.RandomBytes(8)),
		"addresses": addresses, "metadata": map[string]string{}, "accessIPv4": "", "accessIPv6": "",
		"image": "", "flavor": map[string]any{"original_name": "m1.small", "vcpus": 1, "ram": 2048, "disk": 20},
		"links":               []map[string]string{{"rel": "self", "href": self}},
		"key_name":            nil,
		"OS-EXT-STS:vm_state": strings.ToLower(srv.Status), "OS-EXT-STS:power_state": 1, "OS-EXT-STS:task_state": nil,
		"OS-SRV-USG:launched_at": srv.created.UTC().Format("2006-01-02T15:04:05.000000"), "OS-SRV-USG:terminated_at": nil,
		"OS-EXT-AZ:availability_zone": "nova", "OS-DCF:diskConfig": "MANUAL", "config_drive": "",
		"security_groups": []map[string]string{{"name": "default"}}, "locked": false, "tags": []string{},
		"os-extended-volumes:volumes_attached": []any{},
	}
}

// ---- internals ----

func (s *Server) anyCellDownLocked() bool {
	for _, down := range s.downCells {
		if down {
			return true
		}
	}
	return false
}

func (s *Server) now() time.Time { return s.cfg.Now().UTC() }

func (r *Router) clone() Router {
	c := *r
	c.Routes = slices.Clone(r.Routes)
	return c
}

func (srv *NovaServer) clone() NovaServer {
	c := *srv
	c.Addresses = map[string][]Address{}
	for k, v := range srv.Addresses {
		c.Addresses[k] = slices.Clone(v)
	}
	return c
}

// writeServiceError writes each service's error shape: Neutron's NeutronError,
// Keystone's {"error":{code,message,title}}, Nova's {"<kind>":{code,message}}.
func writeServiceError(w http.ResponseWriter, service string, status int, msg string) {
	switch service {
	case ServiceNetwork:
		writeNeutronError(w, status, strings.ReplaceAll("HTTP"+http.StatusText(status), " ", ""), msg)
	case ServiceIdentity:
		simhttp.WriteJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "title": http.StatusText(status)}})
	default:
		kind := map[int]string{400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest",
			413: "overLimit", 429: "overLimit", 503: "serviceUnavailable"}[status]
		if kind == "" {
			kind = "computeFault"
		}
		simhttp.WriteJSON(w, status, map[string]any{kind: map[string]any{"code": status, "message": msg}})
	}
}

func writeNeutronError(w http.ResponseWriter, status int, typ, msg string) {
	simhttp.WriteJSON(w, status, map[string]any{"NeutronError": map[string]string{"type": typ, "message": msg, "detail": ""}})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// newID is a Keystone-style ID: 32 hex digits.
func newID() string { return hex.EncodeToString(simhttp.RandomBytes(16)) }
