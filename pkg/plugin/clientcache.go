package plugin

import (
	"crypto/sha256"
	"strings"
	"sync"

	"k8s.io/utils/lru"
)

// ClientCache keeps one API client per identity (an endpoint and a user, say),
// reused across a plugin's calls so that its login session or token is too. A
// client whose secrets changed (a rotated password) is replaced, not kept beside
// the new one. The secrets are kept only as a digest: the cache holds no
// credential of its own beside the client's. It keeps the clients of the
// MaxCachedClients identities used last. The zero value is ready to use.
type ClientCache[C any] struct {
	mu      sync.Mutex
	clients *lru.Cache // id → cachedClient[C]; made on first use
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
	client, err := newClient()
	if err != nil {
		return client, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.lookupLocked(id); ok && cached.secrets == digest {
		return cached.client, nil // another caller made one meanwhile: one session, not two
	}
	c.clients.Add(id, cachedClient[C]{client: client, secrets: digest})
	return client, nil
}

func (c *ClientCache[C]) lookup(id string) (cachedClient[C], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookupLocked(id)
}

// lookupLocked is lookup with c.mu held.
func (c *ClientCache[C]) lookupLocked(id string) (cachedClient[C], bool) {
	if c.clients == nil {
		c.clients = lru.New(MaxCachedClients)
	}
	v, ok := c.clients.Get(id)
	if !ok {
		return cachedClient[C]{}, false
	}
	return v.(cachedClient[C]), true
}

// IdentityOf joins the parts that identify a client (none of them secret) into
// an id for Get.
func IdentityOf(parts ...string) string { return strings.Join(parts, "\x00") }
