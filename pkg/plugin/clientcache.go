package plugin

import (
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/limbo-dev/limbo/pkg/refusedlogin"
)

// ClientCache keeps one API client per identity (an endpoint and a user, say),
// reused across a plugin's calls so that its login session or token is too. A
// client whose secrets changed (a rotated password) is replaced, not kept beside
// the new one. The secrets are kept only as a digest: the cache holds no
// credential of its own beside the client's. It keeps the clients of the
// MaxCachedClients identities used last, and drops a client unused for
// MaxClientIdle. The zero value is ready to use.
//
// A client its backend refused the credentials of (newClient's error matches
// ErrCredentialsRefused) is not tried again with the same secrets for
// FailedClientRetry: its error is returned. Every failed pass, Tombstone attempt
// and event retried the login at once, a dozen times in the first ten seconds
// of a wrong password — enough for Keystone's lockout_failure_attempts to lock
// the account. Other failures (an endpoint down) are tried again at once.
type ClientCache[C any] struct {
	// Clock tells the time of failures and of uses, and runs the sweeps of
	// idle clients; nil: the real clock.
	Clock clock.WithDelayedExecution

	mu       sync.Mutex
	clients  *lru.Cache           // id → cachedClient[C]; made on first use
	used     map[string]time.Time // id → the last Get of its client, for each id in clients
	sweeping bool                 // a sweep of idle clients is due (sweepLater)
	failed   *lru.Cache           // id → failedClient
}

// MaxClientIdle is how long a ClientCache keeps a client nobody asks for. The
// clients of a Bundle deleted, or of a plugin resource edited to another
// endpoint or user, are never asked for again; kept until MaxCachedClients
// newer identities pushed them out, they held their sessions — and a
// password-authenticated client its password, to log in again — for the life
// of the process.
const MaxClientIdle = time.Hour

// clientSweepInterval is how often, while it keeps a client, a ClientCache
// looks for idle ones to drop.
const clientSweepInterval = time.Minute

// FailedClientRetry is how long a ClientCache returns the error of a client
// whose credentials were refused, its identity and secrets unchanged, before it
// tries again.
const FailedClientRetry = refusedlogin.Retry

// ErrCredentialsRefused marks the error of a client whose backend refused its
// credentials (a 401 to its login): see ClientCache.
var ErrCredentialsRefused = errors.New("credentials refused")

// failedClient is a client that could not be made: with which secrets, why and
// when.
type failedClient struct {
	secrets [sha256.Size]byte
	err     error
	at      time.Time
}

// MaxCachedClients bounds a ClientCache: identities come from Bundle specs, whose
// authors can name a new endpoint or user with every edit, and a client kept for
// each for good grew limbo's memory without end. One dropped and needed again
// logs in again.
const MaxCachedClients = 4096

type cachedClient[C any] struct {
	client  C
	secrets [sha256.Size]byte
}

// Get returns the client of identity id made with secrets, or makes one with
// newClient (outside the cache's lock: it may log in over the network) and keeps
// it. A failed newClient keeps nothing.
func (c *ClientCache[C]) Get(id string, secrets []string, newClient func() (C, error)) (C, error) {
	digest := sha256.Sum256([]byte(strings.Join(secrets, "\x00")))
	if cached, ok := c.lookup(id); ok && cached.secrets == digest {
		return cached.client, nil
	}
	if err := c.recentFailure(id, digest); err != nil {
		var none C
		return none, err
	}
	client, err := newClient()
	if err != nil {
		if errors.Is(err, ErrCredentialsRefused) {
			c.mu.Lock()
			c.failed.Add(id, failedClient{secrets: digest, err: err, at: c.now()})
			c.mu.Unlock()
		}
		return client, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed.Remove(id)
	if cached, ok := c.lookupLocked(id); ok && cached.secrets == digest {
		return cached.client, nil // another caller made one meanwhile: one session, not two
	}
	c.clients.Add(id, cachedClient[C]{client: client, secrets: digest})
	c.used[id] = c.now()
	c.sweepLater()
	return client, nil
}

// recentFailure is the error of the client of id that could not be made with
// the secrets whose digest is digest, less than FailedClientRetry ago; nil if
// there is none.
func (c *ClientCache[C]) recentFailure(id string, digest [sha256.Size]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	v, ok := c.failed.Get(id)
	if !ok {
		return nil
	}
	if f := v.(failedClient); f.secrets == digest && c.now().Sub(f.at) < FailedClientRetry {
		return f.err
	}
	return nil
}

func (c *ClientCache[C]) now() time.Time { return c.clock().Now() }

func (c *ClientCache[C]) clock() clock.WithDelayedExecution {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}

// init makes the caches on first use; c.mu is held.
func (c *ClientCache[C]) init() {
	if c.clients == nil {
		c.used = map[string]time.Time{}
		c.clients = lru.NewWithEvictionFunc(MaxCachedClients, func(id lru.Key, _ any) { delete(c.used, id.(string)) })
		c.failed = lru.New(MaxCachedClients)
	}
}

// sweepLater has sweepIdle run in clientSweepInterval, unless it is due
// already; c.mu is held. The sweeps run on a timer, not at Get: the cache of a
// plugin whose last Bundle is gone is asked for nothing again.
func (c *ClientCache[C]) sweepLater() {
	if c.sweeping {
		return
	}
	c.sweeping = true
	// In a goroutine of its own: a fake clock runs the func while it holds
	// its lock, which sweepLater's next AfterFunc takes.
	c.clock().AfterFunc(clientSweepInterval, func() { go c.sweepIdle() })
}

// sweepIdle drops the clients unused for MaxClientIdle, and sweeps again later
// while it keeps any.
func (c *ClientCache[C]) sweepIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for id, used := range c.used {
		if now.Sub(used) >= MaxClientIdle {
			c.clients.Remove(id) // and from c.used, by the eviction func
		}
	}
	c.sweeping = false
	if c.clients.Len() > 0 {
		c.sweepLater()
	}
}

func (c *ClientCache[C]) lookup(id string) (cachedClient[C], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookupLocked(id)
}

// lookupLocked is lookup with c.mu held.
func (c *ClientCache[C]) lookupLocked(id string) (cachedClient[C], bool) {
	c.init()
	v, ok := c.clients.Get(id)
	if !ok {
		return cachedClient[C]{}, false
	}
	now := c.now()
	if now.Sub(c.used[id]) >= MaxClientIdle { // idle since the last sweep
		c.clients.Remove(id)
		return cachedClient[C]{}, false
	}
	c.used[id] = now
	return v.(cachedClient[C]), true
}

// IdentityOf joins the parts that identify a client (none of them secret) into
// an id for Get.
func IdentityOf(parts ...string) string { return strings.Join(parts, "\x00") }
