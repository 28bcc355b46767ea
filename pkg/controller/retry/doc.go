// Package retry is the work-queue rate limiter of limbo's controllers: how soon
// an object whose reconcile failed is tried again.
package retry
