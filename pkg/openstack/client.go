package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/limbo-dev/limbo/pkg/boundedtext"
	"github.com/limbo-dev/limbo/pkg/refusedlogin"
	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// DefaultTimeout bounds one HTTP request when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// ExtensionAtomicExtraRoutes is the alias of Neutron's extension that adds
// add_extraroutes and remove_extraroutes.
const ExtensionAtomicExtraRoutes = "extraroute-atomic"

// ExtensionRevisionIfMatch is the alias of Neutron's extension that honours an
// update's If-Match: revision_number=N; without it the header is ignored, and
// a whole-list update of a router's routes is unguarded.
const ExtensionRevisionIfMatch = "revision-if-match"

// MicroversionDownCells is the compute microversion from which Nova lists the
// servers of a down cell as stubs with status StatusUnknown and no addresses;
// below it Nova leaves them out by default and still answers 200.
const MicroversionDownCells = "2.69"

// StatusUnknown is the status of a down cell's stub.
const StatusUnknown = "UNKNOWN"

var (
	// ErrNotFound: the router (or extension) was not found (404). For a router
	// that is no proof it is gone: Neutron answers 404 as well for a router the
	// token may not see (another project's, to a non-admin).
	ErrNotFound = errors.New("openstack: not found")
	// ErrRevisionMismatch: an update guarded by If-Match found the router at
	// another revision (412): read it again and retry.
	ErrRevisionMismatch = errors.New("openstack: the router changed since it was read (revision mismatch)")
	// ErrUnauthorized: Keystone refused the credentials (401 to the
	// authentication, or to a re-authentication after a 401).
	ErrUnauthorized = errors.New("openstack: Keystone refused the credentials")
)

// Credentials authenticate with Keystone v3: an application credential (ID and
// secret), or a user (name, password, domain name) scoped to a project ID.
type Credentials struct {
	ApplicationCredentialID     string
	ApplicationCredentialSecret string
	Username                    string
	Password                    string
	ProjectID                   string
	UserDomainName              string
}

// Config configures a Client.
type Config struct {
	// AuthURL is Keystone's v3 endpoint, for example https://keystone:5000/v3.
	AuthURL string
	// Region selects the catalog's endpoints; empty takes the one region in
	// which the catalog has both a network and a compute endpoint (an error
	// when there are several, or none).
	Region      string
	Credentials Credentials
	// Timeout bounds each HTTP request; zero means DefaultTimeout.
	Timeout time.Duration
	// Now is the clock of MicroversionRecheck and of a refused
	// re-authentication (refusedlogin.Retry); nil means time.Now.
	Now func() time.Time
}

// MicroversionRecheck is how long a cloud seen without MicroversionDownCells is
// listed without it before its version document is read again (an upgraded cloud
// is seen without a restart).
const MicroversionRecheck = 10 * time.Minute

// Route is a router's static route.
type Route = routers.Route

// Router is the part of a Neutron router route-gc reads.
type Router struct {
	ID string
	// ProjectID is the project that owns the router (Neutron's project_id, or
	// tenant_id where only that is set).
	ProjectID      string
	Routes         []Route
	RevisionNumber int
}

// Client talks to one project's Neutron and Nova.
type Client struct {
	network *gophercloud.ServiceClient
	compute *gophercloud.ServiceClient
	// project is the ID of the project the token is scoped to.
	project string

	now func() time.Time

	// refused remembers Keystone's refusal of a re-authentication, which
	// answers the re-authentications of the next refusedlogin.Retry.
	refused refusedlogin.Memory

	// mu guards microversion and olderAt: a Client is shared by every Bundle that
	// uses the same cloud and credentials.
	mu sync.Mutex
	// microversion is the compute microversion of server listings, once the
	// cloud was seen to support MicroversionDownCells; empty until then.
	microversion string
	// olderAt is when the cloud was last seen without MicroversionDownCells.
	olderAt time.Time
}

// Servers is what one listing of the project's Nova servers found.
type Servers struct {
	// Addresses maps every address (fixed or floating) to its server's ID.
	Addresses map[netip.Addr]string
	// Count is the number of servers listed, Unknown included.
	Count int
	// Pages is the number of pages the listing read, an empty last one
	// included. Nova lists a down cell's servers (as stubs, counted in
	// Unknown) on the first page only: a page after it carries a marker, and
	// Nova then leaves a down cell's servers out and still answers 200, unless
	// list_records_by_skipping_down_cells is false (then it answers 500). A
	// listing of more than one page is known complete only there.
	Pages int
	// Unknown is the number of servers listed with status StatusUnknown: the
	// stubs of a down cell's servers, whose addresses are not known.
	Unknown int
	// Unreadable is the number of the other servers whose addresses could not
	// all be read: an entry of another shape than Nova's, an address that does
	// not parse, or none at all where Neutron has ports of the server (Nova's
	// network info cache can be empty for a while), or could not be asked.
	// What such a server's addresses are is not known either. A server listed
	// without addresses and without ports has none (booted without a network,
	// or its build failed); one being built (BUILD) is not asked.
	Unreadable int
	// UnreadableServers names the first MaxNamedServers of them ("name (id)"),
	// for an operator to find.
	UnreadableServers []string
}

// MaxNamedServers bounds Servers.UnreadableServers.
const MaxNamedServers = 5

// MaxPortChecks bounds the servers listed without addresses that one listing
// asks Neutron about; the others count as Unreadable.
const MaxPortChecks = 20

// New authenticates and locates the network and compute endpoints.
func New(ctx context.Context, cfg Config) (*Client, error) {
	c, err := newClient(ctx, cfg)
	return c, bounded(err)
}

func newClient(ctx context.Context, cfg Config) (*Client, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	provider, err := gcopenstack.NewClient(cfg.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("keystone %q: %w", cfg.AuthURL, err)
	}
	// Every answer read bounded: authURL, and the catalog's endpoints after it,
	// are whatever the Bundle's author wrote (responselimit).
	provider.HTTPClient = http.Client{Timeout: timeout, Transport: responselimit.Transport(http.DefaultTransport), CheckRedirect: responselimit.RefuseRedirects}
	provider.UserAgent.Prepend("limbo-route-gc")
	provider.MaxBackoffRetries = MaxRateLimitRetries
	provider.RetryBackoffFunc = waitRetryAfter
	c := cfg.Credentials
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: cfg.AuthURL,
		AllowReauth:      true,
	}
	if c.ApplicationCredentialID != "" {
		opts.ApplicationCredentialID, opts.ApplicationCredentialSecret = c.ApplicationCredentialID, c.ApplicationCredentialSecret
	} else {
		opts.Username, opts.Password, opts.DomainName, opts.TenantID = c.Username, c.Password, c.UserDomainName, c.ProjectID
	}
	if err := gcopenstack.Authenticate(ctx, provider, opts); err != nil {
		if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
			return nil, fmt.Errorf("keystone authentication: %w: %w", ErrUnauthorized, err)
		}
		return nil, fmt.Errorf("keystone authentication: %w", err)
	}
	project, err := tokenProject(provider)
	if err != nil {
		return nil, fmt.Errorf("keystone authentication: %w", err)
	}
	region := cfg.Region
	if region == "" {
		if region, err = catalogRegion(provider); err != nil {
			return nil, err
		}
	}
	eo := gophercloud.EndpointOpts{Region: region}
	network, err := gcopenstack.NewNetworkV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("neutron endpoint: %w", err)
	}
	compute, err := gcopenstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("nova endpoint: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	client := &Client{network: network, compute: compute, project: project, now: now, refused: refusedlogin.Memory{Now: now}}
	reauthenticate := provider.ReauthFunc
	provider.ReauthFunc = func(ctx context.Context) error { return client.reauthenticate(ctx, reauthenticate) }
	return client, nil
}

// reauthenticate is the provider's ReauthFunc, which gophercloud calls after a
// 401 to log in again with the same credentials (login), unless Keystone refused
// them less than refusedlogin.Retry ago: then that refusal is the answer.
// Once Keystone revoked the token (a password changed, an application
// credential deleted or expired), every call re-authenticated and was refused,
// each a failed login: a dozen in the first ten seconds, then one per pass and
// per Tombstone attempt, enough for Keystone's lockout_failure_attempts to lock
// the account — which plugin.ClientCache prevents only for the first login.
func (c *Client) reauthenticate(ctx context.Context, login func(context.Context) error) error {
	if err := c.refused.Recent(); err != nil {
		return err
	}
	err := login(ctx)
	if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		c.refused.Remember(err)
	}
	return err
}

// A rate-limited request (429, or 498) is sent again after the Retry-After the
// cloud answers with (1 s, 2 s, 4 s without one), at most MaxRateLimitRetries
// times in a row and only when the wait is at most MaxRateLimitWait: a longer
// one fails the request with the cloud's answer, so that a plugin call's budget
// is not spent asleep; the plugin's call is retried with the work queue's
// backoff.
const (
	MaxRateLimitRetries = 3
	MaxRateLimitWait    = 10 * time.Second
)

// waitRetryAfter is the provider's RetryBackoffFunc: it waits as the cloud asks
// (see MaxRateLimitRetries) and returns nil to send the request again, or the
// cloud's answer to give up.
func waitRetryAfter(ctx context.Context, answer *gophercloud.ErrUnexpectedResponseCode, _ error, retries uint) error {
	wait, ok := retryAfter(answer.ResponseHeader.Get("Retry-After"), time.Now())
	if !ok {
		wait = time.Second << min(max(retries, 1)-1, 4) // retries counts from 1
	}
	if wait > MaxRateLimitWait {
		return answer
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting %s to send again a request the cloud rate-limited: %w", wait, ctx.Err())
	case <-timer.C:
		return nil
	}
}

// retryAfter reads a Retry-After header's value, delay-seconds or an HTTP date,
// as the wait from now (none for a date past).
func retryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if seconds, err := strconv.ParseUint(value, 10, 32); err == nil {
		return time.Duration(seconds) * time.Second, true
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// v3Token is the Keystone v3 token the provider authenticated with.
func v3Token(provider *gophercloud.ProviderClient) (tokens.CreateResult, error) {
	res, ok := provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return tokens.CreateResult{}, fmt.Errorf("no Keystone v3 token (%T)", provider.GetAuthResult())
	}
	return res, nil
}

// tokenProject is the ID of the project the token is scoped to (a password
// scoped to a project, or an application credential, which always is). A
// re-authentication uses the same credentials, so the same project.
func tokenProject(provider *gophercloud.ProviderClient) (string, error) {
	res, err := v3Token(provider)
	if err != nil {
		return "", err
	}
	project, err := res.ExtractProject()
	if err != nil {
		return "", fmt.Errorf("the token's project: %w", err)
	}
	if project == nil || project.ID == "" {
		return "", errors.New("the token is scoped to no project: the credentials must be scoped to the router's project")
	}
	return project.ID, nil
}

// catalogRegion is the region to use when the spec names none: the one region
// in which the token's catalog has both a (public) network and a compute
// endpoint. gophercloud, given no region, takes the first endpoint of each
// service on its own, and Keystone orders each service's endpoints as it
// likes: the router could be read in one region and the servers listed in
// another, where none of them is a node, and every route would look orphaned.
// Several such regions, or none, are an error naming the regions.
func catalogRegion(provider *gophercloud.ProviderClient) (string, error) {
	res, err := v3Token(provider)
	if err != nil {
		return "", fmt.Errorf("service catalog: %w", err)
	}
	catalog, err := res.ExtractServiceCatalog()
	if err != nil {
		return "", fmt.Errorf("service catalog: %w", err)
	}
	network, compute := endpointRegions(catalog, "network"), endpointRegions(catalog, "compute")
	var shared []string
	for _, r := range network {
		if slices.Contains(compute, r) {
			shared = append(shared, r)
		}
	}
	switch {
	case len(shared) == 1:
		return shared[0], nil
	case len(shared) > 1:
		return "", fmt.Errorf("service catalog: openstack.region is empty, and the catalog has network and compute endpoints in the regions %s: set openstack.region to the router's", quoted(shared))
	case len(network) == 0 || len(compute) == 0:
		return "", nil // no endpoint of one service at all: gophercloud says which
	}
	return "", fmt.Errorf("service catalog: no region has both a network and a compute endpoint (network in %s, compute in %s): set openstack.region", quoted(network), quoted(compute))
}

// endpointRegions are the regions of the catalog's public endpoints of service
// type typ (the interface gophercloud uses), in the catalog's order, each once:
// region_id, or region where that is all an endpoint has.
func endpointRegions(catalog *tokens.ServiceCatalog, typ string) []string {
	var out []string
	for _, entry := range catalog.Entries {
		if entry.Type != typ {
			continue
		}
		for _, ep := range entry.Endpoints {
			region := ep.RegionID
			if region == "" {
				region = ep.Region
			}
			if gophercloud.Availability(ep.Interface) == gophercloud.AvailabilityPublic && !slices.Contains(out, region) {
				out = append(out, region)
			}
		}
	}
	return out
}

// quoted renders names as "a", "b".
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// ProjectID is the ID of the project the client's token is scoped to: Nova
// lists that project's servers (without all_tenants, whatever the roles).
func (c *Client) ProjectID() string { return c.project }

// Router reads a router's routes and revision.
func (c *Client) Router(ctx context.Context, id string) (*Router, error) {
	r, err := routers.Get(ctx, c.network, id).Extract()
	if err != nil {
		return nil, bounded(fmt.Errorf("get router %s: %w", id, routerError(id, err)))
	}
	project := r.ProjectID
	if project == "" {
		project = r.TenantID
	}
	return &Router{ID: r.ID, ProjectID: project, Routes: r.Routes, RevisionNumber: r.RevisionNumber}, nil
}

// HasExtension reports whether Neutron lists the extension alias.
func (c *Client) HasExtension(ctx context.Context, alias string) (bool, error) {
	_, err := extensions.Get(ctx, c.network, alias).Extract()
	switch {
	case err == nil:
		return true, nil
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		return false, nil
	}
	return false, bounded(fmt.Errorf("get extension %s: %w", alias, refusedReauthentication(err)))
}

// RemoveRoutes removes routes atomically (extraroute-atomic); routes that are
// not there are fine.
func (c *Client) RemoveRoutes(ctx context.Context, routerID string, routes []Route) error {
	if err := extraroutes.Remove(ctx, c.network, routerID, extraroutes.Opts{Routes: &routes}).Err; err != nil {
		return bounded(fmt.Errorf("remove_extraroutes on router %s: %w", routerID, routerError(routerID, err)))
	}
	return nil
}

// SetRoutes replaces the router's routes, provided it is still at revision
// (If-Match); otherwise ErrRevisionMismatch.
func (c *Client) SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) error {
	if routes == nil {
		routes = []Route{} // an empty list, not an absent field: removing the last route
	}
	opts := routers.UpdateOpts{Routes: &routes, RevisionNumber: &revision}
	if err := routers.Update(ctx, c.network, routerID, opts).Err; err != nil {
		return bounded(fmt.Errorf("update routes of router %s at revision %d: %w", routerID, revision, routerError(routerID, err)))
	}
	return nil
}

// ListServers lists every Nova server the project sees, all pages, at
// microversion MicroversionDownCells where the cloud supports it (so that a
// down cell's servers are counted in Unknown instead of missing unseen).
//
// The first request has no parameter at all: Nova lists a down cell's stubs
// only to a request without limit, marker, sort_key, sort_dir or filters
// (servers.py _is_cell_down_supported), also at 2.69, and a limit would turn
// them off for good. Without a limit Nova answers a page of its max_limit
// (default 1000) and links the next by a marker; those pages are followed as
// Nova links them, and no longer show a down cell (Servers.Pages).
func (c *Client) ListServers(ctx context.Context) (Servers, error) {
	compute, err := c.computeForListing(ctx)
	if err != nil {
		return Servers{}, bounded(fmt.Errorf("list Nova servers: %w", refusedReauthentication(err)))
	}
	out := Servers{Addresses: map[netip.Addr]string{}}
	var addressless []servers.Server
	unreadable := func(s servers.Server) {
		out.Unreadable++
		if len(out.UnreadableServers) < MaxNamedServers {
			out.UnreadableServers = append(out.UnreadableServers, fmt.Sprintf("%s (%s)", s.Name, s.ID))
		}
	}
	// emptyNext: the last page handled linked a next one, which gophercloud
	// read and found empty (it hands no empty page on). It was a page too: one
	// with a marker, on which Nova shows no down cell.
	emptyNext := false
	err = servers.List(compute, servers.ListOpts{}).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		list, err := servers.ExtractServers(page)
		if err != nil {
			return false, err
		}
		next, err := page.NextPageURL()
		if err != nil {
			return false, err
		}
		out.Pages++
		emptyNext = next != ""
		for _, s := range list {
			out.Count++
			addrs, malformed := serverAddresses(s.Addresses)
			switch {
			case s.Status == StatusUnknown:
				out.Unknown++
			case malformed:
				unreadable(s)
			case len(addrs) == 0 && !withoutAddresses[s.Status]:
				addressless = append(addressless, s)
			}
			for _, addr := range addrs {
				out.Addresses[addr] = s.ID
			}
		}
		return true, nil
	})
	if err != nil {
		return Servers{}, bounded(fmt.Errorf("list Nova servers: %w", refusedReauthentication(err)))
	}
	if emptyNext {
		out.Pages++
	}
	for i, s := range addressless {
		if i >= MaxPortChecks {
			unreadable(s)
			continue
		}
		switch has, err := c.hasPorts(ctx, s.ID); {
		case err != nil:
			return Servers{}, bounded(fmt.Errorf("list Nova servers: server %s (%s) is listed without addresses, and its Neutron ports could not be read: %w", s.Name, s.ID, err))
		case has:
			unreadable(s)
		}
	}
	return out, nil
}

// hasPorts tells whether Neutron has a port of the server with a fixed address.
func (c *Client) hasPorts(ctx context.Context, serverID string) (bool, error) {
	pages, err := ports.List(c.network, ports.ListOpts{DeviceID: serverID}).AllPages(ctx)
	if err != nil {
		return false, classify(err)
	}
	list, err := ports.ExtractPorts(pages)
	if err != nil {
		return false, err
	}
	for _, p := range list {
		if len(p.FixedIPs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// computeForListing is the compute client with the microversion of server
// listings: MicroversionDownCells when the compute endpoint's version document
// reports it, none when the cloud is older. A supported version is kept for
// the Client's life; an older cloud is asked again MicroversionRecheck later, so
// that an upgrade is seen without a restart. A failed read fails the listing:
// going on without the microversion could miss a down cell. The document is read
// without holding mu: a slow compute endpoint does not hold up the listings of
// the other Bundles that share the Client (two reads at once are harmless).
func (c *Client) computeForListing(ctx context.Context) (*gophercloud.ServiceClient, error) {
	c.mu.Lock()
	microversion, olderAt := c.microversion, c.olderAt
	c.mu.Unlock()
	if microversion == "" && (olderAt.IsZero() || c.now().Sub(olderAt) >= MicroversionRecheck) {
		supported, err := c.computeSupports(ctx, MicroversionDownCells)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if supported {
			c.microversion = MicroversionDownCells
		} else {
			c.olderAt = c.now()
		}
		microversion = c.microversion
		c.mu.Unlock()
	}
	compute := *c.compute // a copy: the shared client stays without a microversion
	compute.Microversion = microversion
	return &compute, nil
}

// computeSupports reads the compute endpoint's version document (Nova's
// GET /v2.1/: {"version":{"id":"v2.1","version":"<max>","min_version":"2.1",…}})
// and reports whether want lies between its minimum and maximum microversion.
// A document without a maximum is an API without microversions (v2.0).
func (c *Client) computeSupports(ctx context.Context, want string) (bool, error) {
	var doc struct {
		Version *struct {
			Version    string `json:"version"`
			MaxVersion string `json:"max_version"`
			MinVersion string `json:"min_version"`
		} `json:"version"`
	}
	opts := &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}}
	if _, err := c.compute.Get(ctx, c.compute.Endpoint, &doc, opts); err != nil { //nolint:bodyclose // gophercloud reads the body into doc and closes it
		return false, fmt.Errorf("compute API version document %s: %w", c.compute.Endpoint, err)
	}
	if doc.Version == nil {
		return false, nil
	}
	highest := doc.Version.Version
	if highest == "" {
		highest = doc.Version.MaxVersion
	}
	if highest == "" {
		return false, nil
	}
	wanted, err := parseMicroversion(want)
	if err != nil {
		return false, err
	}
	highestMV, err := parseMicroversion(highest)
	if err != nil {
		return false, fmt.Errorf("compute API version document %s: %w", c.compute.Endpoint, err)
	}
	if doc.Version.MinVersion != "" {
		lowestMV, err := parseMicroversion(doc.Version.MinVersion)
		if err != nil {
			return false, fmt.Errorf("compute API version document %s: %w", c.compute.Endpoint, err)
		}
		if !wanted.atLeast(lowestMV) {
			return false, nil
		}
	}
	return highestMV.atLeast(wanted), nil
}

// microversion is an API microversion, major.minor.
type microversion struct{ major, minor int }

func parseMicroversion(s string) (microversion, error) {
	major, minor, err := utils.ParseMicroversion(s)
	return microversion{major, minor}, err
}

func (m microversion) atLeast(o microversion) bool {
	return m.major > o.major || (m.major == o.major && m.minor >= o.minor)
}

// withoutAddresses are the server statuses in which Nova lists a server
// without addresses as a matter of course: being built. (One in ERROR has none
// if its build failed, but it may have run before: its ports tell.)
var withoutAddresses = map[string]bool{"BUILD": true}

// serverAddresses reads Nova's {"<network>":[{"addr":…}]}, and reports whether
// anything in there was of another shape or did not parse (malformed): the
// addresses read are then not all the server's.
func serverAddresses(addresses map[string]any) (out []netip.Addr, malformed bool) {
	for _, list := range addresses {
		entries, ok := list.([]any)
		if !ok {
			malformed = true
			continue
		}
		for _, e := range entries {
			m, _ := e.(map[string]any)
			s, _ := m["addr"].(string)
			a, err := netip.ParseAddr(s)
			if err != nil {
				malformed = true
				continue
			}
			out = append(out, a.Unmap())
		}
	}
	return out, malformed
}

// maxErrorText bounds the text of the errors a Client returns: an error answer's
// body (responselimit.MaxErrorBody), and room for what is said around it.
const maxErrorText = responselimit.MaxErrorBody + 4<<10

// bounded is err, or, when its text is longer than maxErrorText, an error of
// its text cut there that still matches the sentinels callers test (errors.Is).
// An answer can put far more into an error than an error answer's bound:
// gophercloud keeps the whole body of an answer with a status it did not expect
// (a 200 where 201 was expected, up to responselimit.MaxBody), and a version
// document's fields are quoted in parse errors; the controller keeps a plugin
// call's error, logs it and shows it in the Bundle's status.
func bounded(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if len(text) <= maxErrorText {
		return err
	}
	cut := &cutError{text: boundedtext.Cut(text, maxErrorText)}
	for _, sentinel := range []error{ErrNotFound, ErrRevisionMismatch, ErrUnauthorized, responselimit.ErrTooLarge, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, sentinel) {
			cut.is = append(cut.is, sentinel)
		}
	}
	return cut
}

// cutError is an error whose text was cut (bounded).
type cutError struct {
	text string
	is   []error
}

func (e *cutError) Error() string   { return e.text }
func (e *cutError) Unwrap() []error { return e.is }

// routerError is classify's error of a call on router id, a 404 said to be
// what it is: no router these credentials can see, which is not proof that
// there is none.
func routerError(id string, err error) error {
	err = classify(err)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("router %s not found or not visible to these credentials (Neutron answers 404 for both): %w", id, err)
	}
	return err
}

func classify(err error) error {
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed):
		return fmt.Errorf("%w: %w", ErrRevisionMismatch, err)
	}
	return refusedReauthentication(err)
}

// refusedReauthentication is err, matching ErrUnauthorized when it is a call's
// 401 whose re-authentication Keystone refused (401 to it, or remembered:
// reauthenticate). gophercloud's error of a failed re-authentication does not
// unwrap to it: the refusal is its ErrReauth.
func refusedReauthentication(err error) error {
	var reauth *gophercloud.ErrUnableToReauthenticate
	if errors.As(err, &reauth) && gophercloud.ResponseCodeIs(reauth.ErrReauth, http.StatusUnauthorized) {
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return err
}
