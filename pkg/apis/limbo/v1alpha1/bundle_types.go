package v1alpha1

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Bundle lists the objects an application needs and the dependencies between them.
// limbo creates them in dependency order, waits for each to be ready, keeps them as
// declared and removes, through the soft-delete engine, what leaves the Bundle.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bdl,categories=limbo
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="RESOURCES",type=string,JSONPath=`.status.resourcesReady`,description="Ready resources of all resources"
// +kubebuilder:printcolumn:name="PENDING",type=integer,JSONPath=`.status.pendingDeletionCount`,description="Objects and external items waiting in limbo"
// +kubebuilder:printcolumn:name="NEXT-DELETION",type=string,JSONPath=`.status.nextDeletion`,description="When the soonest pending deletion is due"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1,description="The Ready condition's message"
// A Bundle's name has at most 63 characters: it is the value of the
// limbo.dev/bundle label on each of its objects (checked on create only, so that
// a Bundle made before the rule can still be updated and deleted).
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.size() <= 63",message="a Bundle's name has at most 63 characters: it is the value of the limbo.dev/bundle label on its objects",optionalOldSelf=true
type Bundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the Bundle's resources: objects and plugins.
	Spec BundleSpec `json:"spec,omitempty"`
	// Status is what the controller observed and did: conditions, the state of each
	// resource and everything in limbo.
	Status BundleStatus `json:"status,omitempty"`
}

// BundleSpec is what the Bundle declares.
type BundleSpec struct {
	// Resources are the objects and plugins of the Bundle. Names are unique. At
	// most 2000: the status keeps an entry for each, and a Bundle past etcd's
	// object size could never write its status again (split it instead).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=2000
	// +optional
	Resources []Resource `json:"resources,omitempty"`

	// AllowEmpty lets a spec without resources delete what the Bundle manages.
	// Without it, an empty spec while the Bundle still manages objects deletes
	// nothing and the Bundle is Stalled (reason EmptyBundle): a render bug that
	// applies `resources: []` must not wipe an application.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// ServiceAccountName is a ServiceAccount in the Bundle's namespace that limbo
	// impersonates for every write of this Bundle's objects (applies, stamps,
	// cancels, deletions), so that the Bundle can do only what the ServiceAccount
	// may. A write it may not make is an Error on that resource (reason
	// Forbidden). Empty: the controller's --default-service-account, or limbo's
	// own identity when that is empty too. A ServiceAccount name: a DNS-1123
	// subdomain, as --default-service-account is checked (x:y would make
	// another user's name).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// Resource is one entry of a Bundle: exactly one of an object or a plugin.
//
// +kubebuilder:validation:XValidation:rule="has(self.object) != has(self.plugin)",message="a resource must have exactly one of object and plugin"
type Resource struct {
	// Name identifies the resource in the Bundle and in references: a DNS-1123 label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// References are this resource's dependencies, and the values it takes from them.
	// +optional
	// +listType=atomic
	References []Reference `json:"references,omitempty"`

	// Object is a complete Kubernetes object. Its namespace defaults to the Bundle's.
	// It is atomic to server-side apply: one field manager owns a template whole
	// (docs/design-decisions.md, "A template is atomic").
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:validation:Type=object
	// +mapType=atomic
	Object *runtime.RawExtension `json:"object,omitempty"`

	// Plugin is a compiled-in plugin that generates objects and finds orphans.
	// +optional
	Plugin *PluginResource `json:"plugin,omitempty"`
}

// Reference is a dependency on another resource of the same Bundle, optionally
// naming a value taken from that resource's live object.
type Reference struct {
	// Name makes !{name} usable in this resource. A reference without a name only
	// orders. (!!{name} is the escape: it is written as the text !{name}.)
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]+$`
	Name string `json:"name,omitempty"`

	// Resource is the resource of this Bundle that is depended on.
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`

	// Path is a JSONPath into the referenced resource's live object, for example
	// data.host; .data.host and {.data.host} are read alike.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`

	// Example stands in for the value before it exists, so that the resource can be
	// validated early.
	// +optional
	Example *apiextensionsv1.JSON `json:"example,omitempty"`
}

// PluginResource invokes a compiled-in plugin.
type PluginResource struct {
	// Name is the registered name of the plugin, for example namespace-gc.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// DeletionDelay is stamped on every orphan this plugin finds: a Go duration ≥ 0.
	// It is also written on each object the plugin generates (as
	// limbo.dev/deletionDelay, unless the plugin set one), which waits it once the
	// plugin no longer generates it.
	// +optional
	DeletionDelay string `json:"deletionDelay,omitempty"`

	// Spec is the plugin's input, validated against the plugin's schema.
	// +optional
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
}

// BundleStatus is what the controller observed and did.
type BundleStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Reconciling and Stalled (kstatus-compatible) and, while
	// the Bundle is being deleted, ContentRemaining and DeletionFailure.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Resources is the state of each resource, in dependency order.
	// +optional
	// +listType=atomic
	Resources []ResourceStatus `json:"resources,omitempty"`

	// PendingDeletions is what this Bundle has in limbo, soonest first: all of it,
	// or the first MaxPendingDeletionsListed (1000) entries when there is more
	// (PendingDeletionCount counts them all). An entry stays until the object is
	// really gone.
	// +optional
	// +listType=atomic
	PendingDeletions []PendingDeletion `json:"pendingDeletions,omitempty"`

	// ResourcesReady is "ready/total", for the RESOURCES column.
	// +optional
	ResourcesReady string `json:"resourcesReady,omitempty"`

	// PendingDeletionCount is the number of entries in limbo, those PendingDeletions
	// lists and those past MaxPendingDeletionsListed, for the PENDING column. Its
	// default shows 0 there from the first status on: a merge patch of the status
	// never carries a zero that was zero before.
	// +optional
	// +kubebuilder:default=0
	PendingDeletionCount int32 `json:"pendingDeletionCount"`

	// NextDeletion is when the soonest pending deletion is due, for the
	// NEXT-DELETION column.
	// +optional
	NextDeletion *metav1.Time `json:"nextDeletion,omitempty"`

	// ManagedKinds are the kinds of the objects the Bundle manages, generated ones
	// included, and of those it has in limbo: where to look for orphans after a
	// resource of the last object of its kind left the spec.
	// +optional
	// +listType=atomic
	ManagedKinds []ManagedKind `json:"managedKinds,omitempty"`
}

// ManagedKind is one kind of object a Bundle manages.
type ManagedKind struct {
	// APIVersion is the kind's group and version, for example apps/v1.
	APIVersion string `json:"apiVersion"`
	// Kind is the kind's name, for example Deployment.
	Kind string `json:"kind"`
}

// ResourceState is the state of one resource of a Bundle.
// +kubebuilder:validation:Enum=Ready;InProgress;Blocked;Error;Deleting
type ResourceState string

// The states of a resource.
const (
	ResourceReady      ResourceState = "Ready"
	ResourceInProgress ResourceState = "InProgress"
	ResourceBlocked    ResourceState = "Blocked"
	ResourceError      ResourceState = "Error"
	ResourceDeleting   ResourceState = "Deleting"
)

// ResourceStatus is the state of one resource of a Bundle.
type ResourceStatus struct {
	// Name is the resource's name in spec.resources.
	Name string `json:"name"`
	// State is Ready, InProgress (applied, not ready yet), Blocked (waiting for a
	// dependency), Error (see reason and message) or Deleting (being torn down).
	State ResourceState `json:"state"`
	// Reason is a CamelCase word that says why the resource is in its state, for
	// example NotReady, DependenciesNotReady or Forbidden.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says in words what the resource is waiting for or what went wrong.
	// +optional
	Message string `json:"message,omitempty"`
	// Object is the live object of an object resource.
	// +optional
	Object *ObjectReference `json:"object,omitempty"`
	// AppliedDigest is a digest of the object as limbo last found it holding
	// what it applied: of the desired object, the live object's UID and its
	// resourceVersion then. A restarted limbo, which no longer remembers its
	// applies, skips the apply of an object still at that resourceVersion when
	// it would apply the same again (any write to the object changes its
	// resourceVersion). A plugin resource that generates objects records the
	// digests of its objects, comma-separated (at most 16). Limbo's own
	// bookkeeping: its format may change.
	// +optional
	AppliedDigest string `json:"appliedDigest,omitempty"`
}

// ObjectReference names one object, down to its UID.
type ObjectReference struct {
	// APIVersion is the object's group and version, for example apps/v1.
	APIVersion string `json:"apiVersion"`
	// Kind is the object's kind, for example Deployment.
	Kind string `json:"kind"`
	// Namespace is the object's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
	// UID is the object's UID: it tells this object from a later one of the same
	// name.
	// +optional
	UID string `json:"uid,omitempty"`
}

// MaxPendingDeletionsListed bounds BundleStatus.PendingDeletions: an entry takes
// about 240 bytes, and a status past the API server's object limit (1.5 MiB with
// etcd's default) cannot be written at all — a deorbit of a workload cluster with
// thousands of claims and Services made it so.
const MaxPendingDeletionsListed = 1000

// MaxPendingDeletionMessage bounds an entry's Message, in bytes: a Tombstone's
// carries its last error (up to 8 KiB of what an endpoint answered), and a
// thousand of those would pass the object limit again. The whole error is in the
// Tombstone's status.lastError.
const MaxPendingDeletionMessage = 512

// ResourceReady reports whether the status has the resource named name Ready
// (false when it does not list it).
func (s *BundleStatus) ResourceReady(name string) bool {
	st := s.Resource(name)
	return st != nil && st.State == ResourceReady
}

// Resource is the status of the resource named name; nil when the status does
// not list it.
func (s *BundleStatus) Resource(name string) *ResourceStatus {
	for i := range s.Resources {
		if s.Resources[i].Name == name {
			return &s.Resources[i]
		}
	}
	return nil
}

// PendingDeletionsCut reports whether PendingDeletions lists fewer entries than
// are in limbo (MaxPendingDeletionsListed): what it leaves out must be found
// another way.
func (s *BundleStatus) PendingDeletionsCut() bool {
	return int(s.PendingDeletionCount) > len(s.PendingDeletions)
}

// PendingDeletion is one object or external item waiting in limbo, or one whose
// deletion cannot proceed (Message says why).
type PendingDeletion struct {
	// APIVersion is the group and version of the object in limbo; for an external
	// item, that of its Tombstone (limbo.dev/v1alpha1).
	APIVersion string `json:"apiVersion"`
	// Kind is the kind of the object in limbo; for an external item, Tombstone.
	Kind string `json:"kind"`
	// Namespace is the namespace of the object or Tombstone in limbo.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the name of the object or Tombstone in limbo.
	Name string `json:"name"`
	// Cluster names the cluster the object lives in when it is not limbo's own (a
	// plugin acting on a workload cluster): the kubeconfig Secret, in the Bundle's
	// namespace, that reaches it. Empty: this cluster.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Resource is the Bundle resource that last declared the object, or the plugin
	// resource that found the item, where known.
	// +optional
	Resource string `json:"resource,omitempty"`
	// DeletionTimestamp is when the countdown started (the object's
	// limbo.dev/deletionTimestamp annotation).
	// +optional
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	// DeleteAfter is the deadline: DeletionTimestamp plus the deletion delay. The
	// object is deleted at this time unless it comes back into the Bundle first.
	// +optional
	DeleteAfter *metav1.Time `json:"deleteAfter,omitempty"`
	// Message says what holds the deletion up (an invalid limbo.dev/deletionDelay, a
	// failed delete, the Bundle not being Ready yet), "deleting" while the delete
	// runs, or, for a Tombstone, which external item it stands for.
	// +optional
	Message string `json:"message,omitempty"`
}

// Messages of the pendingDeletions entries of orphans their Bundle holds back,
// countdown or not: by its readiness gate, and by its guard against an emptied
// spec. kubectl limbo pending reads them (Held) to show such an orphan held.
const (
	PendingMessageWaitingForReady = "waiting for every resource of the Bundle to be Ready"
	PendingMessageEmptyBundle     = "not deleted: the Bundle's spec has no resources; set spec.allowEmpty: true to delete what it manages"
)

// The other holds an entry's message tells of, each its own way: a
// Tombstone's entry (which names its external item first) ends with
// PendingMessageHeld and the reason, PendingMessageWaitingForReady while its
// Bundle is not Ready (the Tombstone controller waits for it); a plugin's due
// item its plugin's delete gate holds starts with PendingMessageDueHeld and the
// gate's reason; one the plugin did not judge in the last pass ends with
// PendingMessageNotJudged.
const (
	PendingMessageHeld      = "; held: "
	PendingMessageDueHeld   = "due" + PendingMessageHeld
	PendingMessageNotJudged = "nothing is deleted until the plugin judges it again"
)

// PendingMessageBeingDeleted begins the message of an entry whose object has a
// deletionTimestamp ("being deleted", then the finalizers holding it).
const PendingMessageBeingDeleted = "being deleted"

// BeingDeleted reports whether the entry's object is being deleted: its
// deletion runs, whatever its countdown said.
func (p *PendingDeletion) BeingDeleted() bool {
	return strings.HasPrefix(p.Message, PendingMessageBeingDeleted)
}

// Held reports whether the entry's orphan is held back (by its Bundle's
// readiness gate or its guard against an emptied spec; a Tombstone by its
// Bundle not Ready; a plugin's item by its plugin's delete gate, or not judged
// by its plugin): not deleted, even once its DeleteAfter has come, until the
// hold ends.
func (p *PendingDeletion) Held() bool {
	return p.Message == PendingMessageWaitingForReady || p.Message == PendingMessageEmptyBundle ||
		strings.HasSuffix(p.Message, PendingMessageHeld+PendingMessageWaitingForReady) ||
		strings.HasPrefix(p.Message, PendingMessageDueHeld) || strings.HasSuffix(p.Message, PendingMessageNotJudged)
}

// InvalidDelay reports whether the entry is never deleted as it stands: it has
// no deadline because its limbo.dev/deletionDelay is invalid, which its message
// names. An entry without a deadline for any other reason waits on something
// (the Bundle's other resources to be Ready, finalizers).
func (p *PendingDeletion) InvalidDelay() bool {
	return p.DeleteAfter == nil && strings.Contains(p.Message, AnnotationDeletionDelay)
}

// BundleList is a list of Bundles.
//
// +kubebuilder:object:root=true
type BundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bundle `json:"items"`
}
