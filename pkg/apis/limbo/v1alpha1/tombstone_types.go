package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Tombstone stands in for an external item (a StorageOS namespace, a Neutron route)
// that is pending deletion. The engine creates it in the Bundle's namespace, owned by
// the Bundle; its finalizer performs the external delete at the deadline, or at once
// on `kubectl delete tombstone`.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=limbo
// +kubebuilder:printcolumn:name="PLUGIN",type=string,JSONPath=`.spec.plugin`
// +kubebuilder:printcolumn:name="KIND",type=string,JSONPath=`.spec.item.kind`
// +kubebuilder:printcolumn:name="ITEM",type=string,JSONPath=`.spec.item.name`
// +kubebuilder:printcolumn:name="DELETE-AFTER",type=string,JSONPath=`.status.deleteAfter`
// +kubebuilder:printcolumn:name="ATTEMPTS",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type Tombstone struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the plugin, the Bundle resource and the external item; it is
	// immutable.
	Spec TombstoneSpec `json:"spec,omitempty"`
	// Status records the deadline and the failed external delete attempts.
	Status TombstoneStatus `json:"status,omitempty"`
}

// TombstoneSpec names the plugin, the Bundle resource and the external item.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a Tombstone's spec is immutable"
type TombstoneSpec struct {
	// Plugin is the plugin that found the orphan.
	Plugin string `json:"plugin"`
	// Resource is the Bundle resource that invoked the plugin.
	Resource string `json:"resource"`
	// Item is the external item pending deletion.
	Item ExternalItem `json:"item"`
}

// ExternalItem identifies an item outside Kubernetes.
type ExternalItem struct {
	// Kind is the plugin's kind of item, for example StorageOSNamespace.
	// +kubebuilder:validation:MaxLength=253
	Kind string `json:"kind"`
	// ID is the item's identity in the external system.
	// +kubebuilder:validation:MaxLength=1024
	ID string `json:"id"`
	// Name is a human-readable name of the item.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Name string `json:"name,omitempty"`
}

// The bounds of an ExternalItem's fields (the Tombstone CRD's maxLength): a
// plugin's items come from a system the Bundle's author may run, and each
// orphan becomes a Tombstone that etcd and every controller's cache keep.
const (
	MaxItemKind = 253
	MaxItemID   = 1024
	MaxItemName = 4096
)

// TombstoneStatus records the countdown and the delete attempts.
type TombstoneStatus struct {
	// DeleteAfter is the deadline of the countdown.
	// +optional
	DeleteAfter *metav1.Time `json:"deleteAfter,omitempty"`
	// Attempts counts the external deletes started: each is marked here before
	// the plugin is called.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// LastError is the error of the last failed external delete.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// LastAttemptTime is when the last external delete was started (marked
	// with Attempts). After a failure the next one waits out the backoff from
	// here, across controller restarts.
	// +optional
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
}

// TombstoneList is a list of Tombstones.
//
// +kubebuilder:object:root=true
type TombstoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tombstone `json:"items"`
}
