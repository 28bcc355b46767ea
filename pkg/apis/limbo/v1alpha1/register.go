package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of limbo's API.
	GroupVersion = schema.GroupVersion{Group: "limbo.dev", Version: "v1alpha1"}

	// SchemeBuilder registers limbo's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds limbo's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// BundleGVK and TombstoneGVK are the kinds limbo serves.
var (
	BundleGVK    = GroupVersion.WithKind("Bundle")
	TombstoneGVK = GroupVersion.WithKind("Tombstone")
)

func init() {
	SchemeBuilder.Register(&Bundle{}, &BundleList{}, &Tombstone{}, &TombstoneList{})
}
