// Package impersonation makes limbo write a Bundle's objects as the Bundle's
// ServiceAccount (spec.serviceAccountName, or the controller's
// --default-service-account), so that a tenant's Bundle can do only what its
// ServiceAccount may.
//
// The Bundle reconciler puts the identity in the context of a pass
// (WithServiceAccount); Client routes every write made with that context —
// create, update, patch, apply, delete: applies, stamps, cancels and deletions of
// the Bundle's objects and its plugins' object items — through a client that
// impersonates it, one per identity, cached. Reads still go to the cache, which
// watches as limbo itself, so that the cost of a pass with nothing to do does not
// grow with the number of tenants; limbo's own kinds (Bundles, Tombstones) are
// always written as limbo.
package impersonation
