package refusedlogin

import (
	"sync"
	"time"
)

// Retry is how long a refusal answers the logins after it.
const Retry = 30 * time.Second

// Memory is what a client remembers of its backend's refusal of its
// credentials (a 401 to a login), so that it answers its logins with that
// refusal for Retry instead of sending them. plugin.ClientCache holds back only
// a client whose first login was refused; a client it keeps logs in again later
// (once its token expired or was revoked: a password rotated in the backend
// before the Secret, an application credential deleted or expired), and sent
// that login again at every failed call, which locks the account as surely.
// The zero value remembers nothing; it is safe for concurrent use.
type Memory struct {
	// Now tells the time of a refusal; nil: time.Now.
	Now func() time.Time

	mu  sync.Mutex
	err error
	at  time.Time
}

// Recent is the refusal remembered less than Retry ago, which is the answer to
// a login meanwhile; nil when a login may be sent.
func (r *Memory) Recent() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil && r.now().Sub(r.at) < Retry {
		return r.err
	}
	return nil
}

// Remember keeps err, the backend's refusal of a login, as the answer to the
// logins of the next Retry.
func (r *Memory) Remember(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err, r.at = err, r.now()
}

func (r *Memory) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}
