// Package bundle is the Bundle reconciler: it validates a Bundle, sorts its
// resources by dependency, applies them in order with server-side apply, reports
// readiness, hands orphans to the soft-delete engine, and tears a deleted Bundle's
// content down in reverse dependency order.
//
// One reconcile of a Bundle is a pass (pass.go: plan, apply in waves, status);
// the pass decides on the objects that left the spec in pass_orphans.go, on a
// plugin's items in objectitems.go, and, in a sharded controller, checks that
// the Bundle is still its shard's before writing (pass_shard.go). labelled.go
// finds a Bundle's objects by its label; teardown.go deletes a deleted
// Bundle's content.
package bundle
