package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of limbo's API.
	GroupVersion = schema.GroupVersion{Group: "limbo.dev", Version: "v1alpha1"}

	// SchemeBuilder registers limbo's types with a runtime.Scheme. It depends on
	// apimachinery only, so the API package stays cheap to import.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds limbo's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// BundleGVK and TombstoneGVK are the kinds limbo serves.
var (
	BundleGVK    = GroupVersion.WithKind("Bundle")
	TombstoneGVK = GroupVersion.WithKind("Tombstone")
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Bundle{}, &BundleList{}, &Tombstone{}, &TombstoneList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
