// Package namespacegc is the namespace-gc plugin: it deletes StorageOS namespaces
// whose Kubernetes Namespace is gone, through limbo's soft-delete engine (each
// orphan is a Tombstone with the resource's deletionDelay).
//
// Like the StorageOS api-manager controller it is modelled on, it has two triggers:
//   - Namespace deletions: a backend namespace whose Kubernetes Namespace this
//     plugin saw disappear (or start terminating) is an orphan;
//   - a periodic full garbage collection every gcInterval (first run gcDelay after
//     the plugin first sees its resource; 0s disables it): every backend namespace
//     without a Kubernetes Namespace is an orphan, including ones that never had one.
//
// Backend namespaces listed in exclude (default: default) are never touched. A
// backend namespace that still holds volumes (409) is retried with backoff by its
// Tombstone until it is empty.
package namespacegc
