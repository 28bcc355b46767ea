package testenv

import (
	"testing"
	"time"
)

// DefaultTimeout bounds how long a test waits for the cluster to converge.
const DefaultTimeout = 60 * time.Second

// Eventually polls cond until it returns nil, failing t with cond's last error
// after timeout. It is the only way tests wait: never a bare sleep.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 20 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", timeout, err)
		}
		time.Sleep(interval)
		if interval < 250*time.Millisecond {
			interval *= 2
		}
	}
}

// Consistently checks that cond holds on every poll for the whole duration; it
// proves that something does not happen (a deletion before its deadline).
func Consistently(t testing.TB, duration time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("condition broken: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
