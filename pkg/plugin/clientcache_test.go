package plugin_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/limbo-dev/limbo/pkg/plugin"
)

// A client is reused while its identity and secrets stay; a rotated secret
// replaces it; another identity gets its own; a failure keeps nothing.
func TestClientCache(t *testing.T) {
	var cache plugin.ClientCache[*int]
	made := 0
	newClient := func() (*int, error) {
		made++
		n := made
		return &n, nil
	}
	get := func(id, secret string) int {
		t.Helper()
		c, err := cache.Get(id, []string{secret}, newClient)
		if err != nil {
			t.Fatal(err)
		}
		return *c
	}
	steps := []struct {
		id, secret string
		want       int
	}{
		{"a", "pw1", 1},
		{"a", "pw1", 1}, // reused
		{"b", "pw1", 2}, // another identity
		{"a", "pw2", 3}, // rotated: replaced
		{"a", "pw2", 3},
		{"b", "pw1", 2},
	}
	for i, s := range steps {
		if got := get(s.id, s.secret); got != s.want {
			t.Errorf("step %d (%s, %s): client %d, want %d", i, s.id, s.secret, got, s.want)
		}
	}
	// Secrets are told apart one by one: moved from one to the next is changed.
	if c, err := cache.Get("d", []string{"pw", ""}, newClient); err != nil || *c != 4 {
		t.Fatalf("d: client %v, %v; want a new one (4)", c, err)
	}
	if c, err := cache.Get("d", []string{"", "pw"}, newClient); err != nil || *c != 5 {
		t.Errorf("d, the secret in the other place: client %v, %v; want a new one (5)", c, err)
	}
	failing := func() (*int, error) { return nil, errors.New("login refused") }
	if _, err := cache.Get("c", []string{"pw"}, failing); err == nil {
		t.Fatal("a failed login returned no error")
	}
	if got := get("c", "pw2"); got != 6 {
		t.Errorf("after a failed login, another password: client %d, want a new one (6)", got)
	}
}

// A client whose credentials its backend refused is not tried again with the
// same secrets for FailedClientRetry: its error is returned; another failure
// (an endpoint down) is tried again at once. Every failed pass
// and Tombstone attempt logged in again at once, a dozen times in the first ten
// seconds of a wrong password — Keystone's lockout_failure_attempts locks the
// account.
func TestClientCacheFailureNotRetriedAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	cache := plugin.ClientCache[*int]{Clock: clk}
	logins := 0
	refused := fmt.Errorf("keystone authentication: %w: 401", plugin.ErrCredentialsRefused)
	login := func(ok bool) func() (*int, error) {
		return func() (*int, error) {
			logins++
			if !ok {
				return nil, refused
			}
			return new(int), nil
		}
	}
	if _, err := cache.Get("keystone", []string{"wrong"}, login(false)); !errors.Is(err, refused) {
		t.Fatalf("first login: %v, want it refused", err)
	}
	clk.SetTime(clk.Now().Add(plugin.FailedClientRetry - time.Second))
	if _, err := cache.Get("keystone", []string{"wrong"}, login(false)); !errors.Is(err, refused) || logins != 1 {
		t.Errorf("within the retry wait: %v after %d logins, want the first's error, 1 login", err, logins)
	}
	if c, err := cache.Get("keystone", []string{"fixed"}, login(true)); err != nil || c == nil || logins != 2 {
		t.Errorf("the password fixed: %v after %d logins, want a client at once", err, logins)
	}
	if _, err := cache.Get("other", []string{"wrong"}, login(false)); !errors.Is(err, refused) {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(plugin.FailedClientRetry))
	if c, err := cache.Get("other", []string{"wrong"}, login(true)); err != nil || c == nil || logins != 4 {
		t.Errorf("after the retry wait: %v after %d logins, want a new login", err, logins)
	}
	down := func() (*int, error) { logins++; return nil, errors.New("neutron endpoint: 503") }
	for range 2 {
		if _, err := cache.Get("down", []string{"pw"}, down); err == nil {
			t.Fatal("an endpoint down: no error")
		}
	}
	if logins != 6 {
		t.Errorf("an endpoint down: %d logins, want each Get to try again", logins-4)
	}
}

// The clients of the MaxCachedClients identities used last are kept, no more:
// identities come from Bundle specs, which can name a new one with every edit.
func TestClientCacheBounded(t *testing.T) {
	var cache plugin.ClientCache[*int]
	get := func(i int) *int {
		t.Helper()
		c, err := cache.Get(fmt.Sprintf("endpoint-%d", i), []string{"pw"}, func() (*int, error) { return new(int), nil })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := get(0)
	for i := 1; i <= plugin.MaxCachedClients; i++ {
		get(i)
	}
	last := get(plugin.MaxCachedClients)
	if get(plugin.MaxCachedClients) != last {
		t.Error("the identity used last lost its client")
	}
	if get(0) == first {
		t.Errorf("the client of the identity used longest ago is still kept after %d others", plugin.MaxCachedClients)
	}
}

// A client nobody asks for is dropped after MaxClientIdle, asked for or not —
// the client of a Bundle deleted is never asked for again, and kept it held
// its session and password for the life of the process — while one in use
// stays, however long.
func TestClientCacheDropsIdleClients(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	cache := plugin.ClientCache[*int]{Clock: clock}
	made := map[string]int{}
	get := func(id string) {
		t.Helper()
		if _, err := cache.Get(id, []string{"pw"}, func() (*int, error) { made[id]++; return new(int), nil }); err != nil {
			t.Fatal(err)
		}
	}
	// poll waits until cond holds: the sweeps run on the clock's timer, in a
	// goroutine of their own.
	poll := func(cond func() bool, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s after 10s", what)
			}
			time.Sleep(time.Millisecond) // poll
		}
	}
	// step moves the clock once the next sweep is armed (the last one re-arms
	// it while clients are kept).
	step := func(d time.Duration) {
		t.Helper()
		poll(clock.HasWaiters, "no sweep armed")
		clock.Step(d)
	}
	waitLen := func(want int, when string) {
		t.Helper()
		poll(func() bool { return cache.Len() == want }, fmt.Sprintf("not %d clients kept %s", want, when))
	}
	get("gone-bundle")
	get("busy")
	for range 4 { // "busy" asked for every 20 minutes: 80 minutes in all
		step(20 * time.Minute)
		get("busy")
	}
	if made["busy"] != 1 {
		t.Errorf("the client in use was made %d times, want once", made["busy"])
	}
	waitLen(1, "80 minutes after the first was last used")
	// Nobody asks for anything any more: the last goes too.
	step(plugin.MaxClientIdle)
	waitLen(0, "an hour after the last use of each")
	get("gone-bundle")
	if made["gone-bundle"] != 2 {
		t.Errorf("the client dropped was made %d times, want twice (dropped, made again)", made["gone-bundle"])
	}
}
