package retry

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxDelay caps the work queue's backoff for an object whose reconcile failed on
// a transient error (a plugin's backend down, a webhook refusing, a timeout, the
// API server away). controller-runtime's default doubles the delay on every
// failure up to 1000 s, and every event that re-runs a failing reconcile counts:
// a namespace-gc Bundle whose backend was down for ten seconds while Namespaces
// came and went failed sixteen times and was next tried minutes after the
// backend was back, with its poll interval lost (a failed pass has no
// RequeueAfter); a Tombstone whose reads failed through a T-minute API outage
// ran its due delete, or a user's kubectl delete, about T minutes late.
const MaxDelay = 30 * time.Second

// RateLimiter is controller-runtime's per-item exponential backoff, from 5 ms,
// capped at MaxDelay. Not its overall bucket of 10 retries/s (bursts of 100):
// shared by every object, it made one tenant's failures every other tenant's
// wait — after 1,000 failing Bundles, a healthy Bundle's first retry of a
// transient error waited 1m30s, past MaxDelay. The workers bound how many
// reconciles run at once, and the client's rate limiter what they send.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxDelay)
}
