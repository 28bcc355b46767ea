// Package bundle is the Bundle reconciler: it validates a Bundle, sorts its
// resources by dependency, applies them in order with server-side apply, reports
// readiness, hands orphans to the soft-delete engine, and tears a deleted Bundle's
// content down in reverse dependency order.
package bundle
