package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// DefaultTimeout bounds one HTTP request when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultPageSize is the number of servers asked for per Nova page.
const DefaultPageSize = 500

// ExtensionAtomicExtraRoutes is the alias of Neutron's extension that adds
// add_extraroutes and remove_extraroutes.
const ExtensionAtomicExtraRoutes = "extraroute-atomic"

var (
	// ErrNotFound: the router (or extension) does not exist (404).
	ErrNotFound = errors.New("openstack: not found")
	// ErrRevisionMismatch: an update guarded by If-Match found the router at
	// another revision (412): read it again and retry.
	ErrRevisionMismatch = errors.New("openstack: the router changed since it was read (revision mismatch)")
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
	// Region selects the catalog's endpoints; empty takes the first.
	Region      string
	Credentials Credentials
	// Timeout bounds each HTTP request; zero means DefaultTimeout.
	Timeout time.Duration
	// PageSize is the Nova page size; zero means DefaultPageSize.
	PageSize int
}

// Route is a router's static route.
type Route = routers.Route

// Router is the part of a Neutron router route-gc reads.
type Router struct {
	ID             string
	Routes         []Route
	RevisionNumber int
}

// Client talks to one project's Neutron and Nova.
type Client struct {
	network  *gophercloud.ServiceClient
	compute  *gophercloud.ServiceClient
	pageSize int
}

// New authenticates and locates the network and compute endpoints.
func New(ctx context.Context, cfg Config) (*Client, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	provider, err := gcopenstack.NewClient(cfg.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("keystone %q: %w", cfg.AuthURL, err)
	}
	provider.HTTPClient = http.Client{Timeout: timeout}
	provider.UserAgent.Prepend("limbo-route-gc")
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
		return nil, fmt.Errorf("keystone authentication: %w", err)
	}
	eo := gophercloud.EndpointOpts{Region: cfg.Region}
	network, err := gcopenstack.NewNetworkV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("neutron endpoint: %w", err)
	}
	compute, err := gcopenstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("nova endpoint: %w", err)
	}
	pageSize := cfg.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	return &Client{network: network, compute: compute, pageSize: pageSize}, nil
}

// Router reads a router's routes and revision.
func (c *Client) Router(ctx context.Context, id string) (*Router, error) {
	r, err := routers.Get(ctx, c.network, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get router %s: %w", id, classify(err))
	}
	return &Router{ID: r.ID, Routes: r.Routes, RevisionNumber: r.RevisionNumber}, nil
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
	return false, fmt.Errorf("get extension %s: %w", alias, err)
}

// RemoveRoutes removes routes atomically (extraroute-atomic); routes that are
// not there are fine.
func (c *Client) RemoveRoutes(ctx context.Context, routerID string, routes []Route) error {
	if err := extraroutes.Remove(ctx, c.network, routerID, extraroutes.Opts{Routes: &routes}).Err; err != nil {
		return fmt.Errorf("remove_extraroutes on router %s: %w", routerID, classify(err))
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
		return fmt.Errorf("update routes of router %s at revision %d: %w", routerID, revision, classify(err))
	}
	return nil
}

// ServerAddresses returns every address (fixed or floating) of every Nova
// server the project sees, all pages, mapped to the server's ID.
func (c *Client) ServerAddresses(ctx context.Context) (map[netip.Addr]string, int, error) {
	out := map[netip.Addr]string{}
	count := 0
	err := servers.List(c.compute, servers.ListOpts{Limit: c.pageSize}).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		list, err := servers.ExtractServers(page)
		if err != nil {
			return false, err
		}
		for _, s := range list {
			count++
			for _, addr := range serverAddresses(s.Addresses) {
				out[addr] = s.ID
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list Nova servers: %w", err)
	}
	return out, count, nil
}

// serverAddresses reads Nova's {"<network>":[{"addr":…}]}; anything else in
// there is skipped.
func serverAddresses(addresses map[string]any) []netip.Addr {
	var out []netip.Addr
	for _, list := range addresses {
		entries, _ := list.([]any)
		for _, e := range entries {
			m, _ := e.(map[string]any)
			s, _ := m["addr"].(string)
			if a, err := netip.ParseAddr(s); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

func classify(err error) error {
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed):
		return fmt.Errorf("%w: %w", ErrRevisionMismatch, err)
	}
	return err
}
