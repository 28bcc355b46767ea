package plugin

import (
	"crypto/sha256"
	"strings"
	"sync"
)

// ClientCache keeps one API client per identity (an endpoint and a user, say),
// reused across a plugin's calls so that its login session or token is too. A
// client whose secrets changed (a rotated password) is replaced, not kept beside
// the new one. The secrets are kept only as a digest: the cache holds no
// credential of its own beside the client's. The zero value is ready to use.
type ClientCache[C any] struct {
	mu      sync.Mutex
	clients map[string]cachedClient[C]
}

type cachedClient[C any] struct {
	client  C
	secrets [sha256.Size]byte
}

// Get returns the client of identity id made with secrets, or makes one with
// newClient (outside the cache's lock: it may log in over the network) and keeps
// it. A failed newClient keeps nothing.
func (c *ClientCache[C]) Get(id string, secrets []string, newClient func() (C, error)) (C, error) {
	digest := sha256.Sum256([]byte(strings.Join(secrets, "\x00")))
	c.mu.Lock()
	cached, ok := c.clients[id]
	c.mu.Unlock()
	if ok && cached.secrets == digest {
		return cached.client, nil
	}
	client, err := newClient()
	if err != nil {
		return client, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.clients[id]; ok && cached.secrets == digest {
		return cached.client, nil // another caller made one meanwhile: one session, not two
	}
	if c.clients == nil {
		c.clients = map[string]cachedClient[C]{}
	}
	c.clients[id] = cachedClient[C]{client: client, secrets: digest}
	return client, nil
}

// IdentityOf joins the parts that identify a client (none of them secret) into
// an id for Get.
func IdentityOf(parts ...string) string { return strings.Join(parts, "\x00") }
