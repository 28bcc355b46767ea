package namespacegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/storageos"
)

// Name is the plugin's registered name; ItemKind the kind of its external items.
const (
	Name     = "namespace-gc"
	ItemKind = "StorageOSNamespace"
)

// MinGCInterval is the shortest gcInterval but 0s (disabled): each collection
// logs in to StorageOS and lists its namespaces, and a shorter one runs about as
// fast as the Bundle's passes go (the controller's floor for any plugin's poll
// is the same second).
const MinGCInterval = time.Second

// Options are the controller-wide defaults (flags --namespace-delete-gc-interval
// and --namespace-delete-gc-delay).
type Options struct {
	// DefaultInterval is gcInterval's default; one below MinGCInterval but 0
	// (disabled) counts as MinGCInterval.
	DefaultInterval time.Duration
	DefaultDelay    time.Duration
	// Metrics count the StorageOS API calls (nil: counted, not served).
	Metrics *storageos.Metrics
}

// Spec is the plugin's input; its schema is generated from it (plugin.SchemaOf).
type Spec struct {
	StorageOS struct {
		// Endpoint is the StorageOS API's URL, scheme and port as given. It is
		// in every item's name (bounded by limbov1alpha1.MaxItemName).
		Endpoint string `json:"endpoint" schema:"minLength=1,maxLength=2048"`
		// CredentialsSecretRef names a Secret in the Bundle's namespace with the
		// keys username and password.
		CredentialsSecretRef struct {
			Name string `json:"name" schema:"minLength=1"`
		} `json:"credentialsSecretRef"`
	} `json:"storageos"`
	// GCInterval is the period of the full garbage collection, at least
	// MinGCInterval (1s); 0s disables it.
	GCInterval *string `json:"gcInterval,omitempty" schema:"duration"`
	// GCDelay is the time from the plugin's first run to the first collection.
	GCDelay *string `json:"gcDelay,omitempty" schema:"duration"`
	// Exclude lists backend namespaces never touched (default: default).
	Exclude []string `json:"exclude,omitempty"`
}

// Plugin is the namespace-gc plugin. It remembers, per Bundle resource, the
// Kubernetes Namespaces it saw, to tell a deletion from a namespace that never was.
type Plugin struct {
	opts    Options
	state   plugin.ResourceStates[resourceState]
	clients plugin.ClientCache[*storageos.Client] // by endpoint and user
}

// resourceState is what one Bundle resource saw of the namespaces.
type resourceState struct {
	mu   sync.Mutex
	seen map[string]bool // Kubernetes Namespaces at the last plan
	gone map[string]bool // backend namespaces orphaned by a deletion or a GC run
	// firstPlan and lastGC (zero before the first) time the collections:
	// the next is due gcDelay after the first plan, then gcInterval after the
	// last, with the spec's values of the moment, so that an edit to either
	// takes effect at once rather than after the run the old one scheduled.
	firstPlan, lastGC time.Time
}

// nextGC is when the next collection is due under cfg.
func (st *resourceState) nextGC(cfg *config) time.Time {
	if st.lastGC.IsZero() {
		return st.firstPlan.Add(cfg.delay)
	}
	return st.lastGC.Add(cfg.interval)
}

func newResourceState() *resourceState {
	return &resourceState{seen: map[string]bool{}, gone: map[string]bool{}}
}

// New returns the plugin.
func New(opts Options) *Plugin {
	if opts.Metrics == nil {
		opts.Metrics = storageos.NewMetrics(nil)
	}
	if opts.DefaultInterval > 0 && opts.DefaultInterval < MinGCInterval {
		opts.DefaultInterval = MinGCInterval // what a spec may ask for at least
	}
	return &Plugin{opts: opts, state: plugin.ResourceStates[resourceState]{New: newResourceState}}
}

// Describe names the plugin, its schema and its trigger: Namespaces.
func (p *Plugin) Describe() plugin.Description {
	return plugin.Description{
		Name:    Name,
		Schema:  plugin.SchemaOf[Spec](),
		Watches: []client.Object{&corev1.Namespace{}},
	}
}

// ForgetBundle drops what the plugin remembers of a Bundle that is gone.
func (p *Plugin) ForgetBundle(uid types.UID) { p.state.Forget(uid) }

// ForgetResource drops what the plugin remembers of a resource that is gone.
func (p *Plugin) ForgetResource(uid types.UID, resource string) {
	p.state.ForgetResource(uid, resource)
}

// Plan computes the inventory: the backend's namespaces, desired while a
// Kubernetes Namespace of the same name exists (or excluded).
func (p *Plugin) Plan(ctx context.Context, req plugin.Request) (*plugin.Result, error) {
	cfg, err := p.parse(req.Spec)
	if err != nil {
		return nil, err
	}
	api, err := p.client(ctx, req, cfg.Spec)
	if err != nil {
		return nil, err
	}
	// Read from the cache as they are, not copied: the plan reads names and
	// deletion marks only, and a copy of every Namespace of a 5,000-Namespace
	// cluster cost 7 MB a plan.
	var k8s corev1.NamespaceList
	if err := req.Client.List(ctx, &k8s, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Kubernetes Namespaces: %w", err)
	}
	present, terminating := map[string]bool{}, map[string]bool{}
	for _, ns := range k8s.Items {
		if !going(&ns) {
			present[ns.Name] = true
		} else {
			terminating[ns.Name] = true // a terminating Namespace counts as going: a deletion
		}
	}
	if len(present) == 0 {
		return nil, errors.New("no Kubernetes Namespace listed: refusing to compute orphans")
	}
	backend, err := api.ListNamespaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("list StorageOS namespaces: %w", err)
	}

	st := p.state.Of(req)
	st.mu.Lock()
	defer st.mu.Unlock()
	for name := range st.seen {
		if !present[name] {
			st.gone[name] = true
		}
	}
	for name := range terminating {
		st.gone[name] = true // even when this is the first time we see it
	}
	st.seen = present
	if st.firstPlan.IsZero() {
		st.firstPlan = req.Now
	}
	gcRun := cfg.interval > 0 && !req.Now.Before(st.nextGC(&cfg))
	if gcRun {
		st.lastGC = req.Now
	}
	exclude := map[string]bool{}
	for _, name := range cfg.Exclude {
		exclude[name] = true
	}
	inv := &plugin.Inventory{DesiredListed: len(present)}
	inBackend := map[string]bool{}
	orphans := 0
	for _, ns := range backend {
		inBackend[ns.Name] = true
		item := plugin.ExternalItem{ExternalItem: limbov1alpha1.ExternalItem{Kind: ItemKind, ID: ns.ID, Name: ItemName(ns.Name, cfg.StorageOS.Endpoint)}}
		switch {
		case exclude[ns.Name] || present[ns.Name]:
			item.Desired = true
			delete(st.gone, ns.Name)
		case gcRun || st.gone[ns.Name]:
			st.gone[ns.Name] = true
			orphans++
		default:
			continue // not judged in this run: no deletion observed, no GC yet
		}
		inv.External = append(inv.External, item)
	}
	// A deletion is forgotten once its backend namespace is gone; a listing of
	// none at all (StorageOS always has its default one) shows nothing gone.
	for name := range st.gone {
		if !inBackend[name] && len(backend) > 0 {
			delete(st.gone, name)
		}
	}
	res := &plugin.Result{Inventory: inv, Ready: true,
		Message: fmt.Sprintf("%d StorageOS namespaces, %d orphaned", len(backend), orphans)}
	if cfg.interval > 0 {
		res.PollAfter = st.nextGC(&cfg).Sub(req.Now)
	}
	return res, nil
}

// DeleteExternal deletes one StorageOS namespace. Gone is success; a stale version
// is re-listed and retried; a namespace that still holds volumes is an error (the
// Tombstone retries with backoff); an excluded name, a Kubernetes Namespace of
// the same name that exists again, or a namespace found on another endpoint than
// the resource names now stops the delete for good (plugin.ErrNotResponsible: the
// Tombstone is cancelled, also a forced one).
func (p *Plugin) DeleteExternal(ctx context.Context, req plugin.Request, item limbov1alpha1.ExternalItem) error {
	cfg, err := p.parse(req.Spec)
	if err != nil {
		return err
	}
	// Another endpoint is another StorageOS cluster, or the same one under another
	// URL: this one's namespace IDs mean nothing there, and one not found there is
	// not gone. A namespace of the same cluster is found again by the next plan and
	// gets a Tombstone and a countdown of its own.
	if err := plugin.RefuseMovedItem(item, endpointPlace(cfg.StorageOS.Endpoint), "storageos.endpoint"); err != nil {
		return err
	}
	name, _ := plugin.SplitItemName(item.Name)
	for _, excluded := range cfg.Exclude {
		if name == excluded {
			return fmt.Errorf("StorageOS namespace %q is excluded: never deleted: %w", name, plugin.ErrNotResponsible)
		}
	}
	var ns corev1.Namespace
	switch err := req.Reader.Get(ctx, client.ObjectKey{Name: name}, &ns); {
	case err == nil && !going(&ns):
		return fmt.Errorf("the Kubernetes Namespace %q exists again: not deleting its StorageOS namespace: %w", name, plugin.ErrNotResponsible)
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("check Kubernetes Namespace %q: %w", name, err)
	}
	api, err := p.client(ctx, req, cfg.Spec)
	if err != nil {
		return err
	}
	var notFound error // the 404 of the previous attempt's delete
	for attempt := 1; ; attempt++ {
		list, err := api.ListNamespaces(ctx)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			// StorageOS always has its default namespace: a listing of none at
			// all (a proxy's answer, a StorageOS restarting) proves nothing, and
			// neither does a 404 from the same front. The namespace read by its
			// id gives the version to delete it with; a 404 is no proof either.
			ns, err := api.GetNamespace(ctx, item.ID)
			if err != nil {
				return fmt.Errorf("StorageOS listed no namespace at all (it always has its default one: a proxy's answer, or a StorageOS restarting?), and reading namespace %q failed: not taken as proof that it is gone: %w", name, err)
			}
			list = []storageos.Namespace{*ns}
		}
		var current *storageos.Namespace
		for i := range list {
			if list[i].ID == item.ID {
				current = &list[i]
			}
		}
		switch {
		case current == nil:
			return nil // already gone
		case notFound != nil:
			return fmt.Errorf("StorageOS namespace %q is still listed after its delete answered 404 (a proxy's page, or an endpoint that is not this StorageOS?): %w", name, notFound)
		}
		err = api.DeleteNamespace(ctx, current.ID, current.Version)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, storageos.ErrNotFound):
			// Gone, most likely; but a 404 that is not StorageOS's looks the
			// same, and a Deleted event for a namespace that still exists
			// would be a false audit trail: the next listing decides.
			notFound = err
		case errors.Is(err, storageos.ErrStaleVersion) && attempt < maxDeleteAttempts:
			// changed since we listed it: list again
		case errors.Is(err, storageos.ErrStaleVersion):
			return fmt.Errorf("StorageOS namespace %q kept changing: %w", name, storageos.ErrStaleVersion)
		case errors.Is(err, storageos.ErrNamespaceNotEmpty):
			return fmt.Errorf("StorageOS namespace %q still holds volumes: %w", name, err)
		default:
			return err
		}
	}
}

// maxDeleteAttempts bounds the deletes of one DeleteExternal that a changed
// namespace (412) sends again with the version listed anew.
const maxDeleteAttempts = 3

// ItemName is a backend namespace's item name: its name and the endpoint it was
// found on, which DeleteExternal holds against the endpoint the resource names
// then.
func ItemName(namespace, endpoint string) string {
	return plugin.ItemNameOn(namespace, endpointPlace(endpoint))
}

// endpointPlace is a StorageOS endpoint as the place of its namespaces' items.
func endpointPlace(endpoint string) string { return "StorageOS " + endpoint }

// going reports whether a Kubernetes Namespace is being deleted: its StorageOS
// namespace is then an orphan, as if it were gone.
func going(ns *corev1.Namespace) bool {
	return !ns.DeletionTimestamp.IsZero() || ns.Status.Phase == corev1.NamespaceTerminating
}

// config is a spec with its defaults.
type config struct {
	Spec
	interval, delay time.Duration
}

// parse is the one reading of a spec, with the controller-wide defaults:
// CheckSpec refuses what it refuses.
func (p *Plugin) parse(raw []byte) (config, error) {
	var c config
	if err := json.Unmarshal(raw, &c.Spec); err != nil {
		return c, err
	}
	if c.Exclude == nil {
		c.Exclude = []string{"default"}
	}
	if err := storageos.CheckEndpoint(c.StorageOS.Endpoint); err != nil {
		return c, field.Invalid(field.NewPath("spec", "storageos", "endpoint"), c.StorageOS.Endpoint, err.Error())
	}
	var err error
	if c.interval, err = plugin.ParseDurationIn("gcInterval", c.GCInterval, p.opts.DefaultInterval, plugin.DurationRange{Min: MinGCInterval, ZeroDisables: true}); err != nil {
		return c, err
	}
	c.delay, err = plugin.ParseDuration("gcDelay", c.GCDelay, p.opts.DefaultDelay, false)
	return c, err
}

// CheckSpec refuses a spec that parse refuses (plugin.SpecChecker).
func (p *Plugin) CheckSpec(raw []byte) error {
	_, err := p.parse(raw)
	return err
}

// client returns a StorageOS client for the spec's endpoint and credentials, reused
// across calls so that its login session is too.
func (p *Plugin) client(ctx context.Context, req plugin.Request, spec Spec) (*storageos.Client, error) {
	secret, err := plugin.ReadSecret(ctx, req, spec.StorageOS.CredentialsSecretRef.Name)
	if err != nil {
		return nil, err
	}
	values, err := secret.Values("username", "password")
	if err != nil {
		return nil, err
	}
	user, pass := values[0], values[1]
	return p.clients.Get(plugin.IdentityOf(spec.StorageOS.Endpoint, user), []string{pass}, func() (*storageos.Client, error) {
		return storageos.New(storageos.Config{Endpoint: spec.StorageOS.Endpoint, Username: user, Password: pass, Metrics: p.opts.Metrics})
	})
}
