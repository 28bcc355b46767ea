package retry

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// An object that keeps failing is retried at most MaxDelay apart, however many
// reconciles failed; its first retries stay fast.
func TestRateLimiterCapsBackoff(t *testing.T) {
	limiter := RateLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "storage"}}
	var delays []time.Duration
	for range 40 {
		delays = append(delays, limiter.When(req))
	}
	if delays[0] > time.Second {
		t.Errorf("first retry after %v, want a fast one", delays[0])
	}
	for i, d := range delays {
		if d > MaxDelay {
			t.Fatalf("retry %d after %v, want at most %v", i+1, d, MaxDelay)
		}
	}
	if last := delays[len(delays)-1]; last != MaxDelay {
		t.Errorf("retry after 40 failures after %v, want the cap %v", last, MaxDelay)
	}
	limiter.Forget(req)
	if d := limiter.When(req); d > time.Second {
		t.Errorf("after a success the next failure waits %v, want a fast retry again", d)
	}
}

// One object's failures are not another's wait: after a thousand others failed,
// an object's first retry is as fast as ever. controller-runtime's overall
// bucket (10 retries/s, bursts of 100) made it wait 1m30s.
func TestRateLimiterIsPerObject(t *testing.T) {
	limiter := RateLimiter()
	for i := range 1000 {
		limiter.When(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant-a", Name: fmt.Sprintf("b%d", i)}})
	}
	if d := limiter.When(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant-b", Name: "healthy"}}); d > time.Second {
		t.Errorf("another tenant's first retry after %v, want a fast one", d)
	}
}
