package routegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/openstack"
	"github.com/limbo-dev/limbo/pkg/plugin"
)

// Name is the plugin's registered name; ItemKind the kind of its external items.
const (
	Name     = "route-gc"
	ItemKind = "NeutronRoute"
)

// DefaultInterval is the poll interval when the spec sets none.
const DefaultInterval = 5 * time.Minute

// maxJitter is the largest extra wait, as a fraction of the interval.
const maxJitter = 0.5

// MinInterval and MaxInterval bound the spec's interval. A shorter one polls
// OpenStack (a router read and a listing of every server, page by page) about
// as fast as the Bundle's passes go (the controller's floor for any plugin's
// poll is the same second); a longer one is no poll (and the schema's longest
// duration, 2562047h, overflowed the jitter into a negative wait).
const (
	MinInterval = time.Second
	MaxInterval = 365 * 24 * time.Hour
)

// maxUpdateAttempts bounds the revision-guarded read-modify-write loop.
const maxUpdateAttempts = 5

// Keys of the credentials Secret.
const (
	KeyApplicationCredentialID     = "applicationCredentialID"
	KeyApplicationCredentialSecret = "applicationCredentialSecret"
	KeyUsername                    = "username"
	KeyPassword                    = "password"
	KeyProjectID                   = "projectID"
	KeyUserDomainName              = "userDomainName"
)

// ErrNoServers is the plan's error when Nova lists no server at all.
var ErrNoServers = errors.New("no Nova server listed for the project: the server list is treated as unknown, and no route is orphaned")

// ErrIncompleteServers is the plan's error, after the count of such servers,
// when Nova lists servers whose addresses are not known: with status UNKNOWN
// (from compute microversion 2.69 the stubs of a down cell's servers, which carry
// no addresses), or without readable addresses (openstack.Servers.Unreadable).
// A route to one of them would look orphaned.
var ErrIncompleteServers = errors.New("the server list is incomplete and treated as unknown, and no route is orphaned")

// ErrOtherProject is the error of a router of another project than the one the
// credentials are scoped to, after both projects. Neutron shows any project's
// router to an admin, but Nova (without all_tenants) lists only the token's
// project's servers: judged against them, every route of the router would be
// an orphan.
var ErrOtherProject = errors.New("the credentials must be scoped to the router's project, where the nodes are servers: " +
	"Nova lists the servers of the credentials' project only, and against them every route would look orphaned")

// Spec is the plugin's input; its schema is generated from it (plugin.SchemaOf).
type Spec struct {
	OpenStack struct {
		// AuthURL is Keystone's v3 endpoint.
		AuthURL string `json:"authURL" schema:"minLength=1,maxLength=2048"`
		Region  string `json:"region,omitempty"`
		// CredentialsSecretRef names a Secret in the Bundle's namespace.
		CredentialsSecretRef struct {
			Name string `json:"name" schema:"minLength=1"`
		} `json:"credentialsSecretRef"`
	} `json:"openstack"`
	// RouterID is the Neutron router's ID. It is in every item's name (bounded
	// by limbov1alpha1.MaxItemName).
	RouterID string `json:"routerID" schema:"minLength=1,maxLength=255"`
	// ClusterCIDR is the pod CIDR; only routes inside it are ever touched.
	ClusterCIDR string `json:"clusterCIDR" schema:"minLength=1"`
	// Interval is the poll period (default 5m), from MinInterval (1s) to
	// MaxInterval (8760h, a year).
	Interval *string `json:"interval,omitempty" schema:"duration"`
}

// config is a spec ready to use.
type config struct {
	Spec
	cidr     netip.Prefix // masked
	interval time.Duration
}

// parse is the one reading of a spec: CheckSpec refuses what it refuses, so that
// a spec Plan cannot use is a spec error, not a plan error on every poll.
func parse(raw []byte) (config, error) {
	var c config
	if err := json.Unmarshal(raw, &c.Spec); err != nil {
		return c, err
	}
	// A typo here would fail every poll's login, not the spec.
	if u, err := url.Parse(c.OpenStack.AuthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, field.Invalid(field.NewPath("spec", "openstack", "authURL"), c.OpenStack.AuthURL,
			"not an http or https URL with a host (Keystone's v3 endpoint, for example https://keystone.example.com:5000/v3)")
	}
	cidr, err := netip.ParsePrefix(c.ClusterCIDR)
	if err != nil {
		return c, field.Invalid(field.NewPath("spec", "clusterCIDR"), c.ClusterCIDR, fmt.Sprintf("not a CIDR: %v", err))
	}
	if cidr.Bits() == 0 {
		// Every route of the router, its default route and a VPN's included, would
		// be inside it: each one whose next hop is no server's would be deleted.
		return c, field.Invalid(field.NewPath("spec", "clusterCIDR"), c.ClusterCIDR, "the whole address space is no pod CIDR: every route of the router would be route-gc's")
	}
	c.cidr = cidr.Masked()
	c.interval, err = plugin.ParseDurationIn("interval", c.Interval, DefaultInterval, plugin.DurationRange{Min: MinInterval, Max: MaxInterval})
	return c, err
}

// CheckSpec refuses a spec that parse refuses (plugin.SpecChecker).
func (*Plugin) CheckSpec(raw []byte) error {
	_, err := parse(raw)
	return err
}

// Options configure the plugin.
type Options struct {
	// Metrics receive the counters; nil counts into unregistered ones.
	Metrics *Metrics
	// Now is the plugin's clock: the clients' (openstack.Config.Now), and
	// the one that orders a removal's request and the start of a server
	// listing (serversAskedBefore), whose readings must never go back (time.Now's
	// do not: they are monotonic); nil means time.Now.
	Now func() time.Time
}

// Plugin is the route-gc plugin.
type Plugin struct {
	opts Options

	clients plugin.ClientCache[*openstack.Client] // by authURL, region and user
	state   plugin.ResourceStates[resourceState]
}

// resourceState is one plugin resource's last poll.
type resourceState struct {
	// pass admits one pass (or removal) at a time.
	pass chan struct{}
	// planWaiting holds a plan waiting for pass: removals let it go first
	// (acquireRemoval).
	planWaiting chan struct{}
	// spec is the spec of the cached result; result is nil when the next plan
	// must poll.
	spec     string
	result   *plugin.Result
	nextPoll time.Time
	orphans  map[string]bool // item IDs orphaned at the last poll
	// paged: the last poll's server listing took more than one page (told
	// once, by an EventServersPaged, until a listing fits one page again).
	paged bool
	// listing is the last server listing, nil when it failed: the removals
	// that were waiting for the turn when it started use it instead of
	// listing again (serversAskedBefore).
	listing *serverListing
}

// serverListing is a successful server listing of a plan or a removal.
type serverListing struct {
	servers openstack.Servers
	// started is when its request started (Options.Now).
	started time.Time
	// client is the client it was made with: its cloud, region, credentials
	// and project. Weak: a client the ClientCache dropped (idle, or its
	// credentials changed) is not kept alive, with its password, by the last
	// listing of a resource that polls once a year.
	client weak.Pointer[openstack.Client]
}

// maxSharedListingAge bounds how old a listing a removal shares may be when
// it acts: removals queued far behind each other (each a router read and
// update) would otherwise act on a listing of up to their 30 s: a node pool
// scaled down and straight back up, a new server with a removed one's address
// made meanwhile, could lose its route to the last of them.
const maxSharedListingAge = 10 * time.Second

// servesRemoval reports whether l can stand, at now, for the server listing
// of a removal asked for at asked, to be made with api: it started after the
// removal was asked for, so it is at least as fresh as the decision to remove
// (a server made before that is in it), at most maxSharedListingAge ago, and
// was made with the same client (another project's listing would not show the
// route's server).
func (l *serverListing) servesRemoval(api *openstack.Client, asked, now time.Time) bool {
	return l != nil && l.client == weak.Make(api) && l.started.After(asked) && now.Sub(l.started) <= maxSharedListingAge
}

func newResourceState() *resourceState {
	return &resourceState{pass: make(chan struct{}, 1), planWaiting: make(chan struct{}, 1), orphans: map[string]bool{}}
}

// New returns the plugin.
func New(opts Options) *Plugin {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Plugin{opts: opts, state: plugin.ResourceStates[resourceState]{New: newResourceState}}
}

// ForgetBundle drops what the plugin remembers of a Bundle that is gone.
func (p *Plugin) ForgetBundle(uid types.UID) { p.state.Forget(uid) }

// ForgetResource drops what the plugin remembers of a resource that is gone.
func (p *Plugin) ForgetResource(uid types.UID, resource string) {
	p.state.ForgetResource(uid, resource)
}

// Describe names the plugin and its schema. It watches nothing in Kubernetes:
// OpenStack is polled.
func (p *Plugin) Describe() plugin.Description {
	return plugin.Description{Name: Name, Schema: plugin.SchemaOf[Spec](), DefaultPollInterval: DefaultInterval}
}

// Plan polls OpenStack (at most once per interval) and returns the inventory:
// the router's routes inside the cluster CIDR, desired while their next hop is
// an address of a Nova server.
func (p *Plugin) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	cfg, err := parse(req.Spec)
	if err != nil {
		return nil, err
	}
	st := p.state.Of(req)
	if err := st.acquirePlan(ctx); err != nil {
		return nil, err
	}
	defer st.release()
	if st.result != nil && st.spec == string(req.Spec) && req.Now.Before(st.nextPoll) {
		res := *st.result
		res.PollAfter = st.nextPoll.Sub(req.Now)
		return &res, nil
	}
	st.result = nil
	api, err := p.client(ctx, req, cfg.Spec)
	if err != nil {
		return nil, err
	}
	router, err := api.Router(ctx, cfg.RouterID)
	if err == nil {
		err = sameProject(api, router)
	}
	if err != nil {
		p.opts.Metrics.Failures.WithLabelValues(OpGetRouter).Inc()
		return nil, credentialsRefused(err)
	}
	servers, err := p.listServers(ctx, st, api)
	if err != nil {
		return nil, err
	}
	addrs := servers.Addresses

	inv := &plugin.Inventory{DesiredListed: servers.Count}
	inCIDR, unparsable := 0, 0
	orphans := map[string]bool{}
	for _, r := range router.Routes {
		responsible, err := Responsible(cfg.cidr, r.DestinationCIDR)
		hop, hopErr := netip.ParseAddr(r.NextHop)
		switch {
		case err != nil || hopErr != nil:
			unparsable++
			continue
		case !responsible:
			continue
		}
		inCIDR++
		id := ItemID(r)
		_, desired := addrs[hop.Unmap()]
		if !desired {
			orphans[id] = true
		}
		inv.External = append(inv.External, plugin.ExternalItem{
			ExternalItem: limbov1alpha1.ExternalItem{Kind: ItemKind, ID: id, Name: ItemName(r, cfg.RouterID)}, Desired: desired})
	}
	if _, _, err := inv.Orphans(); err == nil {
		for id := range orphans {
			if !st.orphans[id] {
				p.opts.Metrics.Orphaned.Inc()
			}
		}
		st.orphans = orphans
	}
	msg := fmt.Sprintf("%d routes in %s, %d orphaned; %d servers", inCIDR, cfg.cidr, len(orphans), servers.Count)
	if servers.Pages > 1 {
		msg += fmt.Sprintf(" in %d pages (a down Nova cell shows on the first page only: Nova needs list_records_by_skipping_down_cells = false)", servers.Pages)
	}
	if unparsable > 0 {
		msg += fmt.Sprintf("; %d unparsable routes, never touched", unparsable)
	}
	st.spec, st.nextPoll = string(req.Spec), req.Now.Add(jitter(cfg.interval))
	st.result = &plugin.Result{Inventory: inv, Ready: true, Message: msg}
	res := *st.result
	res.PollAfter = st.nextPoll.Sub(req.Now)
	// Told once, not on every poll (the message says it all along); the cached
	// result, which later plans return, holds no event.
	if servers.Pages > 1 && !st.paged {
		res.Events = []plugin.Event{{Type: corev1.EventTypeWarning, Reason: EventServersPaged, Message: fmt.Sprintf(
			"route-gc: Nova listed the %d servers of the project in %d pages: %s", servers.Count, servers.Pages, pagedCaveat)}}
	}
	st.paged = servers.Pages > 1
	return &res, nil
}

// EventServersPaged is the Warning event of a poll whose server listing took
// more than one page, once until a listing fits one page again.
const EventServersPaged = "ServersPaged"

// pagedCaveat is why a listing of more than one page is worth telling: a down
// cell is seen on the first page only (openstack.Servers.Pages). route-gc
// cannot see how Nova is configured, and a project with more servers than
// Nova's max_limit cannot be listed in one page: it goes on, and says so (in
// the message at every poll, and in an event once).
const pagedCaveat = "Nova shows a down cell's servers on the first page only, and leaves them out of the others " +
	"unless its [api] list_records_by_skipping_down_cells is false (then it fails the listing): " +
	"set it, or the routes of a down cell's servers can be orphaned and removed while the cell is down"

// DeleteExternal removes one orphaned route: atomically where Neutron has
// extraroute-atomic, otherwise by a revision-guarded update of the whole list,
// re-read on 412. A route no longer on the router is success; a router not
// found (404) is an error, retried (removeRoute). The route's
// next hop is checked again first: a route whose server came back is refused
// (plugin.ErrNotResponsible: its Tombstone is cancelled, also a forced one), one
// that cannot be judged (no server listed, or a down cell's) is not removed and
// retried. The check uses the last listing of the resource if it started after
// the removal was asked for (serversAskedBefore): the removals queued behind a
// running one share one listing, instead of each listing every server in turn
// and the later ones running out of their 30 s.
func (p *Plugin) DeleteExternal(ctx context.Context, req plugin.Request, item limbov1alpha1.ExternalItem) error {
	cfg, err := parse(req.Spec)
	if err != nil {
		return err
	}
	route, err := ParseItemID(item.ID)
	if err != nil {
		return err
	}
	if ok, err := Responsible(cfg.cidr, route.DestinationCIDR); err != nil || !ok {
		return fmt.Errorf("route %s is not inside the cluster CIDR %s (clusterCIDR changed since its countdown began?): never touched: %w", item.ID, cfg.cidr, plugin.ErrNotResponsible)
	}
	// Found on another router than the one the resource names now: that router is
	// no longer this resource's, and a route of the same ID on the new one has its
	// own countdown to run (the plan makes its Tombstone once this one is gone).
	if err := plugin.RefuseMovedItem(item, routerPlace(cfg.RouterID), "routerID"); err != nil {
		return err
	}
	st := p.state.Of(req)
	asked := p.opts.Now() // before waiting for the turn: a listing started while it waits will do
	if err := st.acquireRemoval(ctx); err != nil {
		return err
	}
	defer st.release()
	api, err := p.client(ctx, req, cfg.Spec)
	if err != nil {
		return err
	}
	servers, err := p.serversAskedBefore(ctx, st, api, asked)
	if err != nil {
		return fmt.Errorf("not removing route %s: %w", item.ID, err)
	}
	hop, _ := netip.ParseAddr(route.NextHop) // parsed by ParseItemID
	if server, ok := servers.Addresses[hop.Unmap()]; ok {
		// Desired again: not retried (a forced Tombstone, which no pass cancels,
		// would retry for good), the Tombstone is cancelled; the next plan polls
		// again, or its cached inventory would make the Tombstone anew.
		st.result = nil
		return fmt.Errorf("not removing route %s: its next hop is an address of server %s again: %w", item.ID, server, plugin.ErrNotResponsible)
	}
	removed, err := removeRoute(ctx, api, cfg.RouterID, route)
	if err != nil {
		p.opts.Metrics.Failures.WithLabelValues(OpRemoveRoute).Inc()
		return credentialsRefused(err)
	}
	if removed {
		p.opts.Metrics.Removed.Inc()
	}
	st.result = nil // the next plan polls again: the cached inventory still lists the route
	delete(st.orphans, item.ID)
	return nil
}

// removeRoute removes route from the router and reports whether it was there.
//
// A 404 on the router — its read, remove_extraroutes or the guarded update — is
// an error, retried, and never "the route is gone": Neutron answers 404 as well
// for a router these credentials may not see (another project's, once the
// credentials changed), where the route may still be. No 404 is about the route
// alone: a route missing from a router that was read is success (below), and
// remove_extraroutes of a route that is not there answers 200. (The other
// 404 of remove_extraroutes, extraroute-atomic disabled since it was asked, is
// retried too, and the next attempt asks again.) A router deleted on purpose
// leaves its Tombstones retrying until the resource is removed or routerID
// changed (then they are cancelled: RefuseMovedItem).
func removeRoute(ctx context.Context, api *openstack.Client, routerID string, route openstack.Route) (bool, error) {
	atomic, err := api.HasExtension(ctx, openstack.ExtensionAtomicExtraRoutes)
	if err != nil {
		return false, err
	}
	if !atomic {
		// The whole-list update is safe only if Neutron honours its If-Match:
		// without revision-if-match it ignores it, and a route the cloud
		// provider added since the read would go with the orphan.
		guarded, err := api.HasExtension(ctx, openstack.ExtensionRevisionIfMatch)
		if err != nil {
			return false, err
		}
		if !guarded {
			return false, fmt.Errorf("neither %s nor %s in Neutron: a whole-list update of router %s's routes could drop a route added meanwhile, so route %s->%s is not removed", openstack.ExtensionAtomicExtraRoutes, openstack.ExtensionRevisionIfMatch, routerID, route.DestinationCIDR, route.NextHop)
		}
	}
	for range maxUpdateAttempts {
		router, err := api.Router(ctx, routerID)
		if err != nil {
			return false, err
		}
		if err := sameProject(api, router); err != nil {
			return false, err // the last check judged the route against the servers of another project
		}
		switch {
		case !slices.Contains(router.Routes, route):
			return false, nil
		case atomic:
			err = api.RemoveRoutes(ctx, routerID, []openstack.Route{route})
		default:
			rest := slices.DeleteFunc(slices.Clone(router.Routes), func(r openstack.Route) bool { return r == route })
			err = api.SetRoutes(ctx, routerID, rest, router.RevisionNumber)
		}
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, openstack.ErrRevisionMismatch):
			return false, err
		}
		// 412: the router changed since we read it; read it again.
	}
	return false, fmt.Errorf("router %s kept changing during %d attempts to remove route %s->%s: %w", routerID, maxUpdateAttempts, route.DestinationCIDR, route.NextHop, openstack.ErrRevisionMismatch)
}

// sameProject refuses a router that is not of the project the credentials are
// scoped to (ErrOtherProject): Nova lists that project's servers only. One whose
// project Neutron did not say is refused too.
func sameProject(api *openstack.Client, router *openstack.Router) error {
	if router.ProjectID == api.ProjectID() {
		return nil
	}
	return fmt.Errorf("router %s belongs to project %q, but the credentials are scoped to project %q: %w", router.ID, router.ProjectID, api.ProjectID(), ErrOtherProject)
}

// serversAskedBefore returns the servers' addresses as listed with api after
// asked: the resource's last listing if it started after asked
// (serverListing.servesRemoval), otherwise a new one (listServers). The
// caller holds the resource's turn.
func (p *Plugin) serversAskedBefore(ctx context.Context, st *resourceState, api *openstack.Client, asked time.Time) (openstack.Servers, error) {
	if st.listing.servesRemoval(api, asked, p.opts.Now()) {
		return st.listing.servers, nil
	}
	return p.listServers(ctx, st, api)
}

// listServers lists the servers' addresses; a failed, empty or incomplete
// (a down cell's servers in it) listing is an error (and counted). It is kept
// as the resource's last listing, for the removals waiting meanwhile; a failed
// one forgets the last: what the servers are is unknown now, and the
// removals waiting list again (and are refused as long as it stays unknown).
// The caller holds the resource's turn.
func (p *Plugin) listServers(ctx context.Context, st *resourceState, api *openstack.Client) (openstack.Servers, error) {
	started := p.opts.Now()
	list, err := api.ListServers(ctx)
	switch {
	case err != nil:
	case list.Count == 0:
		err = ErrNoServers
	case list.Unknown > 0:
		err = fmt.Errorf("%d of %d Nova servers listed with status %s (in a down cell, without addresses): %w",
			list.Unknown, list.Count, openstack.StatusUnknown, ErrIncompleteServers)
	case list.Unreadable > 0:
		err = fmt.Errorf("%d of %d Nova servers listed without readable addresses (%s): %w",
			list.Unreadable, list.Count, strings.Join(list.UnreadableServers, ", "), ErrIncompleteServers)
	}
	if err != nil {
		st.listing = nil
		p.opts.Metrics.Failures.WithLabelValues(OpListServers).Inc()
		return openstack.Servers{}, credentialsRefused(err)
	}
	st.listing = &serverListing{servers: list, started: started, client: weak.Make(api)}
	return list, nil
}

// ItemID is a route's item ID, "<destination>-><nexthop>".
func ItemID(r openstack.Route) string { return r.DestinationCIDR + "->" + r.NextHop }

// ItemName is a route's item name: its ID and the router it was found on, which
// DeleteExternal holds against the router the resource names then.
func ItemName(r openstack.Route, routerID string) string {
	return plugin.ItemNameOn(ItemID(r), routerPlace(routerID))
}

// routerPlace is a router as the place of its routes' items.
func routerPlace(routerID string) string { return "router " + routerID }

// ParseItemID reads an item ID back into a route.
func ParseItemID(id string) (openstack.Route, error) {
	dst, hop, ok := strings.Cut(id, "->")
	if !ok {
		return openstack.Route{}, fmt.Errorf("item id %q is not <destination>-><nexthop>", id)
	}
	if _, err := netip.ParsePrefix(dst); err != nil {
		return openstack.Route{}, fmt.Errorf("item id %q: destination: %w", id, err)
	}
	if _, err := netip.ParseAddr(hop); err != nil {
		return openstack.Route{}, fmt.Errorf("item id %q: next hop: %w", id, err)
	}
	return openstack.Route{DestinationCIDR: dst, NextHop: hop}, nil
}

// jitter spreads the polls of many Bundles: interval plus 0 to +50 %, at most
// the longest duration (parse bounds the interval well below it, but a wait
// that overflowed would be negative: a poll at once).
func jitter(interval time.Duration) time.Duration {
	return jitterBy(interval, rand.Float64())
}

// jitterBy is jitter with its random fraction f, in [0, 1).
func jitterBy(interval time.Duration, f float64) time.Duration {
	extra := time.Duration(f * maxJitter * float64(interval)) // < interval: fits
	if interval > math.MaxInt64-extra {
		return math.MaxInt64
	}
	return interval + extra
}

// credentials reads the spec's Secret: an application credential if either of
// its keys is set, otherwise username, password, project and domain.
func credentials(ctx context.Context, req plugin.Request, name string) (openstack.Credentials, error) {
	secret, err := plugin.ReadSecret(ctx, req, name)
	if err != nil {
		return openstack.Credentials{}, err
	}
	if secret.Has(KeyApplicationCredentialID) || secret.Has(KeyApplicationCredentialSecret) {
		v, err := secret.Values(KeyApplicationCredentialID, KeyApplicationCredentialSecret)
		if err != nil {
			return openstack.Credentials{}, err
		}
		return openstack.Credentials{ApplicationCredentialID: v[0], ApplicationCredentialSecret: v[1]}, nil
	}
	v, err := secret.Values(KeyUsername, KeyPassword, KeyProjectID, KeyUserDomainName)
	if err != nil {
		return openstack.Credentials{}, fmt.Errorf("%w, or the keys %s and %s", err, KeyApplicationCredentialID, KeyApplicationCredentialSecret)
	}
	return openstack.Credentials{Username: v[0], Password: v[1], ProjectID: v[2], UserDomainName: v[3]}, nil
}

// client returns an authenticated client for the spec, reused across calls (its
// token with it) while the endpoint and credentials stay the same.
func (p *Plugin) client(ctx context.Context, req plugin.Request, spec Spec) (*openstack.Client, error) {
	creds, err := credentials(ctx, req, spec.OpenStack.CredentialsSecretRef.Name)
	if err != nil {
		return nil, err
	}
	cfg := openstack.Config{AuthURL: spec.OpenStack.AuthURL, Region: spec.OpenStack.Region, Credentials: creds, Now: p.opts.Now}
	id := plugin.IdentityOf(cfg.AuthURL, cfg.Region, creds.ApplicationCredentialID, creds.Username, creds.ProjectID, creds.UserDomainName)
	return p.clients.Get(id, []string{creds.ApplicationCredentialSecret, creds.Password}, func() (*openstack.Client, error) {
		c, err := openstack.New(ctx, cfg)
		if err != nil {
			p.opts.Metrics.Failures.WithLabelValues(OpAuthenticate).Inc()
		}
		return c, credentialsRefused(err) // not tried again at once (ClientCache)
	})
}

// credentialsRefused marks Keystone's refusal of the credentials
// (openstack.ErrUnauthorized: to the first login, or to a re-authentication once
// the token was revoked or expired, which the client does not send again for
// plugin.FailedClientRetry) plugin.ErrCredentialsRefused; any other error is
// returned as it is.
func credentialsRefused(err error) error {
	if errors.Is(err, openstack.ErrUnauthorized) {
		return fmt.Errorf("%w: %w", plugin.ErrCredentialsRefused, err)
	}
	return err
}

// acquire waits for the resource's running pass, if any, to end.
func (st *resourceState) acquire(ctx context.Context) error {
	select {
	case st.pass <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("another pass of this resource is still running: %w", ctx.Err())
	}
}

func (st *resourceState) release() { <-st.pass }

// acquirePlan is acquire for a plan, which removals let go first: queued
// behind removals of routes that come due together (each a Nova listing and a
// router update, seconds on a busy cloud), a plan's 30 s ran out, and the
// resource was in Error, its Bundle no longer Ready and its due Tombstones
// held — again with each batch, for the whole cleanup.
func (st *resourceState) acquirePlan(ctx context.Context) error {
	select {
	case st.planWaiting <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("another pass of this resource is still running: %w", ctx.Err())
	}
	defer func() { <-st.planWaiting }()
	return st.acquire(ctx)
}

// acquireRemoval is acquire for a route's removal: one that gets the turn
// while a plan waits gives it up, and waits for the plan to have it.
func (st *resourceState) acquireRemoval(ctx context.Context) error {
	for {
		select { // no plan waiting
		case st.planWaiting <- struct{}{}:
			<-st.planWaiting
		case <-ctx.Done():
			return fmt.Errorf("another pass of this resource is still running: %w", ctx.Err())
		}
		if err := st.acquire(ctx); err != nil {
			return err
		}
		if len(st.planWaiting) == 0 {
			return nil
		}
		st.release()
	}
}
