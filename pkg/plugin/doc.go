// Package plugin is limbo's plugin framework. A plugin is compiled in and registered
// by name; a Bundle resource `plugin: {name, deletionDelay, spec}` invokes it.
//
// A plugin describes itself (name, JSON schema of its spec, the kinds whose changes
// re-run it) and plans: given its resource's spec and the Bundle, it returns objects
// to apply (Smith-style generators, then treated like `object` resources), its
// inventory (the items that exist in its domain and whether each should), its
// readiness, and when to poll again. Orphans — existing items that should not
// exist — go to the soft-delete engine with the resource's deletionDelay: Kubernetes
// objects are stamped in place and decided by their Bundle's pass (ObjectItem, with
// a delete order, finalizers to clear and an optional DeleteGate), external items
// are represented by Tombstones.
//
// The framework enforces the safety rules every plugin needs (see Inventory.Orphans):
// no orphans from a failed or empty listing of the desired side. A spec's schema is
// generated from its Go type (SchemaOf); what a schema cannot express, the plugin's
// own parse checks at validation too (SpecChecker), so that a spec it cannot use is
// a spec error, not a failure of every plan.
package plugin
