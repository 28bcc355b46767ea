package retry

import (
	"time"

	"golang.org/x/time/rate"
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

// RateLimiter is controller-runtime's default rate limiter (per-item exponential
// backoff from 5 ms, and an overall 10 retries/s with bursts of 100) with the
// per-item backoff capped at MaxDelay.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
