package remotecluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/limbo-dev/limbo/pkg/responselimit"
)

// DefaultKey is the Secret key that holds the kubeconfig when a reference names none.
const DefaultKey = "value"

// Defaults of Options.
const (
	DefaultTimeout = 30 * time.Second
	defaultQPS     = 20
	defaultBurst   = 40
)

// SecretRef is a plugin spec's `kubeConfigSecretRef`: a Secret in the Bundle's
// namespace and the key that holds the kubeconfig.
type SecretRef struct {
	Name string `json:"name" schema:"minLength=1"`
	// Key defaults to DefaultKey.
	Key string `json:"key,omitempty"`
}

// KeyOrDefault is the key to read.
func (r SecretRef) KeyOrDefault() string {
	if r.Key == "" {
		return DefaultKey
	}
	return r.Key
}

// Options configure a Cache.
type Options struct {
	// Scheme knows the typed kinds the clients read and write; nil means client-go's
	// built-in kinds. Unstructured objects work with any scheme.
	Scheme *runtime.Scheme
	// Timeout bounds every request to the remote cluster; zero means DefaultTimeout.
	Timeout time.Duration
}

// Clients talk to one remote cluster.
type Clients struct {
	// Client reads from and writes to the API server directly (no cache).
	Client client.Client
	// Discovery and RESTMapper answer which kinds the cluster serves (a kind
	// whose CRD is absent has no mapping: meta.IsNoMatchError).
	Discovery  discovery.DiscoveryInterface
	RESTMapper meta.RESTMapper
	// Host is the API server's URL, for messages.
	Host string

	// http carries every request of the clients above; its idle connections are
	// closed when the Cache lets go of them.
	http *http.Client
	// answers is http's transport: it sees every response (LastAnswer).
	answers *answers
	// uid is ClusterUID's answer, once read.
	uid atomic.Pointer[types.UID]
}

// ClusterUID is the UID of the cluster's kube-system Namespace (ClusterUID),
// read once through the clients and then remembered.
func (c *Clients) ClusterUID(ctx context.Context) (types.UID, error) {
	if uid := c.uid.Load(); uid != nil {
		return *uid, nil
	}
	uid, err := ClusterUID(ctx, c.Client)
	if err != nil {
		return "", err
	}
	c.uid.Store(&uid)
	return uid, nil
}

// ClusterUID is the UID of the kube-system Namespace reader reads: a cluster's
// identity whatever address reaches it (kubeadm and Cluster API take it so),
// where an API server URL is not — https://kubernetes.default.svc and a load
// balancer's name reach one cluster.
func ClusterUID(ctx context.Context, reader client.Reader) (types.UID, error) {
	var ns corev1.Namespace
	if err := reader.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, &ns); err != nil {
		return "", err
	}
	return ns.UID, nil
}

// LastAnswer is when the API server last answered a request of these clients,
// whatever the answer (an error status included) but 502, 503 and 504, by which
// it, or a proxy before it, says it is unavailable; zero if it never did. A
// request that timed out or could not connect is no answer. It tells a slow
// server, whose large requests time out while others are answered, from one that
// is gone: both make requests fail as IsUnreachable. Its clock is time.Now's.
func (c *Clients) LastAnswer() time.Time {
	if t := c.answers.last.Load(); t != nil {
		return *t
	}
	return time.Time{}
}

// answers is the round tripper that records LastAnswer.
type answers struct {
	next http.RoundTripper
	last atomic.Pointer[time.Time]
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil && !saysUnavailable(resp.StatusCode) {
		now := time.Now() // with its monotonic reading, for comparisons with another time.Now
		a.last.Store(&now)
	}
	return resp, err
}

// saysUnavailable reports whether a status is the server, or a proxy before it,
// saying that it cannot serve: not an answer.
func saysUnavailable(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// CloseIdleConnections, called by http.Client's, reaches the transport under
// client-go's wrappers, which do not pass that call on.
func (a *answers) CloseIdleConnections() { utilnet.CloseIdleConnectionsFor(a.next) }

// WrappedRoundTripper lets client-go's helpers see the transport under it.
func (a *answers) WrappedRoundTripper() http.RoundTripper { return a.next }

// Cache builds Clients from kubeconfig Secrets and keeps them per Secret version.
// A Secret's clients are dropped when it changes or is found gone, so that the
// Cache holds no more than one set of clients (and their connections) per Secret
// that exists, and only those of the MaxCachedClusters Secrets used last. It is
// safe for concurrent use.
type Cache struct {
	opts    Options
	mu      sync.Mutex
	entries *lru.Cache // types.NamespacedName → entry
}

// MaxCachedClusters bounds a Cache. Secrets are named by Bundle specs, whose
// authors can name a new one with every edit, and each set of clients keeps its
// cluster's discovery (up to a bounded answer's 64 MiB, from a server the
// author may run): kept for every Secret ever named, they grew limbo's memory
// without end. One dropped and needed again discovers again.
const MaxCachedClusters = 32

type entry struct {
	uid             types.UID
	resourceVersion string
	key             string
	clients         *Clients
}

// NewCache returns an empty Cache.
func NewCache(opts Options) *Cache {
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Cache{opts: opts, entries: lru.NewWithEvictionFunc(MaxCachedClusters, func(_ lru.Key, e any) {
		e.(entry).clients.http.CloseIdleConnections() // requests in flight finish
	})}
}

// Clients returns the clients of the cluster whose kubeconfig is in the Secret ref
// names in namespace, read through reader (read it from the API server, not a cache
// of Secrets, so that a rotated kubeconfig is seen at once). Problems with the
// Secret or the kubeconfig are an *Error.
func (c *Cache) Clients(ctx context.Context, reader client.Reader, namespace string, ref SecretRef) (*Clients, error) {
	name := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	key := ref.KeyOrDefault()
	if ref.Name == "" {
		return nil, &Error{Secret: name, Key: key, Reason: ReasonInvalidReference, Err: errors.New("kubeConfigSecretRef.name is empty")}
	}
	var secret corev1.Secret
	if err := reader.Get(ctx, name, &secret); err != nil {
		reason := ReasonSecretUnreadable
		if apierrors.IsNotFound(err) {
			reason = ReasonSecretNotFound
			c.store(name, nil)
		}
		return nil, &Error{Secret: name, Key: key, Reason: reason, Err: err}
	}
	c.mu.Lock()
	cached, ok := c.entry(name)
	c.mu.Unlock()
	if ok && cached.uid == secret.UID && cached.resourceVersion == secret.ResourceVersion && cached.key == key {
		return cached.clients, nil
	}
	clients, err := c.build(secret.Data[key], name, key)
	if err != nil {
		c.store(name, nil) // the clients of the Secret's previous version are never used again
		return nil, err
	}
	c.store(name, &entry{uid: secret.UID, resourceVersion: secret.ResourceVersion, key: key, clients: clients})
	return clients, nil
}

// store makes e the entry of a Secret (nil: none) and closes the idle connections
// of the clients it replaces. Requests in flight on them finish: a pass that still
// holds them is not disturbed.
func (c *Cache) store(name types.NamespacedName, e *entry) {
	c.mu.Lock()
	old, ok := c.entry(name)
	if e == nil {
		c.entries.Remove(name) // the eviction closes its idle connections
		c.mu.Unlock()
		return
	}
	c.entries.Add(name, *e) // replacing an entry evicts nothing
	c.mu.Unlock()
	if ok && old.clients != e.clients {
		old.clients.http.CloseIdleConnections()
	}
}

// entry is the cached entry of a Secret. The caller holds c.mu.
func (c *Cache) entry(name types.NamespacedName) (entry, bool) {
	e, ok := c.entries.Get(name)
	if !ok {
		return entry{}, false
	}
	return e.(entry), true
}

// build makes the clients of one kubeconfig. It does not contact the cluster: the
// RESTMapper discovers lazily, so an unreachable cluster shows in the first call.
func (c *Cache) build(kubeconfig []byte, secret types.NamespacedName, key string) (*Clients, error) {
	fail := func(reason Reason, err error) (*Clients, error) {
		return nil, &Error{Secret: secret, Key: key, Reason: reason, Err: err}
	}
	if len(kubeconfig) == 0 {
		return fail(ReasonKeyMissing, fmt.Errorf("no key %q (or it is empty)", key))
	}
	cfg, redact, err := restConfigFrom(kubeconfig)
	if err != nil {
		return fail(ReasonInvalidKubeconfig, err)
	}
	fail = func(reason Reason, err error) (*Clients, error) {
		return nil, &Error{Secret: secret, Key: key, Reason: reason, Err: redact(err)}
	}
	cfg.Timeout = c.opts.Timeout
	cfg.QPS, cfg.Burst = defaultQPS, defaultBurst
	cfg.UserAgent = "limbo-remotecluster"
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fail(ReasonInvalidKubeconfig, err)
	}
	// Every answer read bounded: the server is whatever the Secret's author
	// chose (responselimit).
	seen := &answers{next: responselimit.Transport(httpClient.Transport)}
	httpClient.Transport = seen
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return fail(ReasonInvalidKubeconfig, err)
	}
	cl, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: c.opts.Scheme, Mapper: mapper})
	if err != nil {
		return fail(ReasonInvalidKubeconfig, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fail(ReasonInvalidKubeconfig, err)
	}
	return &Clients{Client: cl, Discovery: disco, RESTMapper: mapper, Host: hostForMessages(cfg), http: httpClient, answers: seen}, nil
}

// hostForMessages is cfg's API server URL as messages show it: the one client-go
// talks to (a server written host:port completed with its scheme). It carries no
// credentials (restConfigFrom refuses them); Redacted all the same.
func hostForMessages(cfg *rest.Config) string {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "(an API server URL that does not parse)"
	}
	return u.Redacted()
}

// restConfigFrom parses a kubeconfig and refuses one that names no server: client-go
// would otherwise fall back to localhost, the wrong cluster. It also refuses one
// that reads credentials from the controller's file system or runs a command
// (see embeddedOnly), or whose server URL carries credentials (see
// urlCredentials). Its errors, and those redact is given, show no password of a
// proxy URL.
func restConfigFrom(kubeconfig []byte) (_ *rest.Config, redact func(error) error, _ error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("not a kubeconfig: %w", err)
	}
	if len(raw.Clusters) == 0 {
		return nil, nil, errors.New("the kubeconfig has no cluster")
	}
	if err := embeddedOnly(raw); err != nil {
		return nil, nil, err
	}
	redact, err = urlCredentials(raw)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, redact(err)
	}
	if cfg.Host == "" {
		return nil, nil, errors.New("the kubeconfig names no server")
	}
	return cfg, redact, nil
}

// urlCredentials refuses a kubeconfig a server URL of which carries credentials
// (user:password@, basic auth, which Kubernetes has not taken since 1.19):
// client-go builds every request URL from it and logs that whole ("Waited
// before sending request"), and quotes it, escaped, in its errors, which go
// into Bundle status and events, read by more people than the Secret. A proxy
// URL may carry credentials (an HTTP or SOCKS proxy's), if it parses: redact
// replaces it, as written and as client-go quotes it, with its redacted form in
// an error's text. The errors name the cluster and show no URL.
func urlCredentials(cfg *clientcmdapi.Config) (redact func(error) error, _ error) {
	replacements := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		c := cfg.Clusters[name]
		if c == nil {
			continue
		}
		if strings.Contains(c.Server, "@") {
			return nil, fmt.Errorf("the server URL of cluster %q carries credentials (user:password@; not shown): Kubernetes has not taken basic auth since 1.19, and client-go logs request URLs whole; give the kubeconfig's user a token or a client certificate", name)
		}
		if !strings.Contains(c.ProxyURL, "@") {
			continue
		}
		u, err := url.Parse(c.ProxyURL)
		if err != nil || u.User == nil {
			return nil, fmt.Errorf("the proxy-url of cluster %q carries credentials and does not parse as a URL (not shown)", name)
		}
		quoted := strconv.Quote(c.ProxyURL)
		replacements[c.ProxyURL], replacements[quoted[1:len(quoted)-1]] = u.Redacted(), u.Redacted()
	}
	return func(err error) error {
		if err == nil || len(replacements) == 0 {
			return err
		}
		msg := err.Error()
		for raw, shown := range replacements {
			msg = strings.ReplaceAll(msg, raw, shown)
		}
		if msg == err.Error() {
			return err
		}
		return errors.New(msg)
	}, nil
}

// embeddedOnly refuses a kubeconfig any of whose users or clusters keeps its
// credentials elsewhere than in the kubeconfig itself: a file to read (tokenFile,
// client-certificate, client-key, certificate-authority) or a command to run
// (exec, auth-provider). The Secret is written by a Bundle's author, and the files
// and commands would be the controller's: tokenFile:
// /var/run/secrets/kubernetes.io/serviceaccount/token would make limbo act, as
// itself, on whatever server the kubeconfig names (and send its token there).
// It runs before client-go reads any of them. Flux's controllers refuse the same.
func embeddedOnly(cfg *clientcmdapi.Config) error {
	found := map[string]bool{}
	for _, u := range cfg.AuthInfos {
		found["tokenFile"] = found["tokenFile"] || u.TokenFile != ""
		found["client-certificate"] = found["client-certificate"] || u.ClientCertificate != ""
		found["client-key"] = found["client-key"] || u.ClientKey != ""
		found["exec"] = found["exec"] || u.Exec != nil
		found["auth-provider"] = found["auth-provider"] || u.AuthProvider != nil
	}
	for _, c := range cfg.Clusters {
		found["certificate-authority"] = found["certificate-authority"] || c.CertificateAuthority != ""
	}
	var used []string
	for _, field := range []string{"tokenFile", "client-certificate", "client-key", "certificate-authority", "exec", "auth-provider"} {
		if found[field] {
			used = append(used, field)
		}
	}
	if len(used) > 0 {
		return fmt.Errorf("the kubeconfig uses %s: credentials must be embedded (token, client-certificate-data, client-key-data, certificate-authority-data), never read from the controller's files or commands", strings.Join(used, ", "))
	}
	return nil
}

// Reason says what is wrong with a kubeconfig Secret.
type Reason string

// Reasons of an Error.
const (
	ReasonInvalidReference  Reason = "InvalidReference"
	ReasonSecretNotFound    Reason = "SecretNotFound"
	ReasonSecretUnreadable  Reason = "SecretUnreadable"
	ReasonKeyMissing        Reason = "KeyMissing"
	ReasonInvalidKubeconfig Reason = "InvalidKubeconfig"
	// ReasonThisCluster: the kubeconfig reaches the cluster the caller runs in
	// (the same ClusterUID), which a caller that means another cluster refuses.
	ReasonThisCluster Reason = "ThisCluster"
)

// Error is a kubeconfig Secret that cannot give clients. A plugin returns it from
// Plan: the resource becomes Error with its message, and nothing is deleted.
type Error struct {
	Secret types.NamespacedName
	Key    string
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	switch e.Reason {
	case ReasonSecretNotFound:
		return fmt.Sprintf("kubeconfig Secret %q not found in namespace %q", e.Secret.Name, e.Secret.Namespace)
	case ReasonKeyMissing:
		return fmt.Sprintf("kubeconfig Secret %q has no key %q (or it is empty)", e.Secret.Name, e.Key)
	default:
		return fmt.Sprintf("kubeconfig Secret %q (key %q): %s: %v", e.Secret.Name, e.Key, e.Reason, e.Err)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// NewKubeconfigSecret returns a Secret that holds kubeconfig under DefaultKey, as a
// `kubeConfigSecretRef: {name}` expects it.
func NewKubeconfigSecret(namespace, name string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{DefaultKey: kubeconfig},
	}
}
