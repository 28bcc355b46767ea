// Package v1alpha1 holds limbo's API types: the Bundle, which lists the objects an
// application needs and the dependencies between them, and the Tombstone, the
// stand-in for an external item that is pending deletion.
//
// The names here are the public contract of DESIGN.md §2; keep them exactly.
//
// +kubebuilder:object:generate=true
// +groupName=limbo.dev
package v1alpha1
