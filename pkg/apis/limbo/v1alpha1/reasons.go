package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The API's vocabulary: condition types, condition and resource reasons, and
// event reasons, each declared once. Tools may match on them: they are API.

// Condition types of a Bundle. Ready, Reconciling and Stalled follow kstatus, so
// `kubectl wait --for=condition=Ready` and kstatus-based tools read Bundles;
// ContentRemaining and DeletionFailure report a teardown, like a Namespace's.
const (
	ConditionContentRemaining = "ContentRemaining"
	ConditionDeletionFailure  = "DeletionFailure"
	ConditionReady            = "Ready"
	ConditionReconciling      = "Reconciling"
	ConditionStalled          = "Stalled"
)

// Reasons of the Bundle's conditions.
const (
	ReasonReady                = "Ready"
	ReasonProgressing          = "Progressing"
	ReasonProgressingWithRetry = "ProgressingWithRetry"
	ReasonResourceError        = "ResourceError"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonInvalidDeletionDelay = "InvalidDeletionDelay"
	ReasonEmptyBundle          = "EmptyBundle"
	ReasonAsExpected           = "AsExpected"
	// ReasonSomeResourcesRemain (ContentRemaining) and ReasonDeleteFailed
	// (DeletionFailure): a teardown's progress.
	ReasonSomeResourcesRemain = "SomeResourcesRemain"
	ReasonDeleteFailed        = "DeleteFailed"
	// ReasonTeardownFailed (DeletionFailure, and a Warning event): a teardown
	// pass failed before it could judge the Bundle's content (a listing
	// refused, an API unavailable); retried.
	ReasonTeardownFailed = "TeardownFailed"
)

// Reasons of a resource's state (status.resources[].reason) while it is processed.
const (
	ReasonDependenciesNotReady = "DependenciesNotReady"
	// ReasonValueNotSet: a reference reads a field of a Ready dependency's status
	// that its controller has not written yet (a LoadBalancer Service's ingress);
	// the resource waits for it, as for a dependency that is not Ready.
	ReasonValueNotSet       = "ValueNotSet"
	ReasonNotOwned          = "NotOwned"
	ReasonControlledByOther = "ControlledByOther"
	ReasonReferenceError    = "ReferenceError"
	// ReasonSubstitutionTooLarge: the values of the resource's references would
	// put more into its object than limbo substitutes (reference.MaxSubstitutedBytes),
	// which needs someone's change.
	ReasonSubstitutionTooLarge = "SubstitutionTooLarge"
	ReasonApplyFailed          = "ApplyFailed"
	// ReasonForbidden, ReasonInvalid and ReasonBadRequest: the API server refused
	// the apply as it stands (its status reason), which needs someone's change.
	ReasonForbidden       = "Forbidden"
	ReasonInvalid         = "Invalid"
	ReasonBadRequest      = "BadRequest"
	ReasonReadFailed      = "ReadFailed"
	ReasonBeingDeleted    = "BeingDeleted"
	ReasonFailed          = "Failed"
	ReasonPluginFailed    = "PluginFailed"
	ReasonUnsafeInventory = "UnsafeInventory"
	ReasonPlanning        = "Planning"
	ReasonPluginNotReady  = "PluginNotReady"
	// ReasonDeletionDelayNotKept: the object, as the API server answered limbo's
	// write, has no limbo.dev/deletionDelay or a shorter one than its template
	// declares — an admission webhook or policy removed or changed it — so that
	// removing the resource would delete it sooner than declared.
	ReasonDeletionDelayNotKept = "DeletionDelayNotKept"
)

// Reasons of spec errors, as they appear in resource states and the Stalled
// condition's message.
const (
	ReasonInvalidResource     = "InvalidResource"
	ReasonDuplicateName       = "DuplicateName"
	ReasonDuplicateObject     = "DuplicateObject"
	ReasonMissingReference    = "MissingReference"
	ReasonDependencyCycle     = "DependencyCycle"
	ReasonUndeclaredReference = "UndeclaredReference"
	ReasonInvalidReference    = "InvalidReference"
	ReasonInvalidObject       = "InvalidObject"
	ReasonUnknownKind         = "UnknownKind"
	// ReasonKindUnavailable: whether the API server serves a template's kind
	// could not be told (discovery failed, an aggregated API unavailable): a
	// spec error of the moment, retried with backoff.
	ReasonKindUnavailable      = "KindUnavailable"
	ReasonClusterScoped        = "ClusterScoped"
	ReasonWrongNamespace       = "WrongNamespace"
	ReasonProhibitedAnnotation = "ProhibitedAnnotation"
	ReasonUnknownPlugin        = "UnknownPlugin"
	ReasonInvalidPluginSpec    = "InvalidPluginSpec"
	ReasonTemplatedName        = "TemplatedName"
)

// Reasons of the events limbo emits on Bundles, objects and Tombstones (an invalid
// delay's event has ReasonInvalidDeletionDelay).
const (
	EventCreated = "Created"
	EventUpdated = "Updated"
	EventAdopted = "Adopted"
	// EventApplied sums up a pass that wrote objects in more than one way (created
	// some, updated others); a pass that only created, only updated or only
	// adopted uses that reason.
	EventApplied           = "Applied"
	EventDeletionScheduled = "DeletionScheduled"
	EventDeletionCancelled = "DeletionCancelled"
	EventDeleted           = "Deleted"
	EventInvalidStamp      = "InvalidDeletionTimestamp"
	EventDeleteFailed      = "DeleteFailed"
	// EventCancelFailed says that a deleted Bundle's teardown could not take one
	// of its plugin's object items out of limbo (its ServiceAccount may not write
	// it): the item keeps limbo's marks, and nothing deletes it.
	EventCancelFailed = "CancelFailed"
	// EventStatusTooLarge says that the API server refused a Bundle's status as
	// too large, and that limbo wrote it reduced: the resources' states and the
	// pending count, without their messages and most pendingDeletions entries.
	EventStatusTooLarge = "StatusTooLarge"
	// EventAPIWarning passes on a warning the API server answered the requests
	// about a resource's object with (a deprecated API, a PodSecurity warning).
	EventAPIWarning = "APIWarning"
	// EventDriftRepeated says that another writer keeps changing fields of an
	// object that limbo sets, and limbo keeps putting them back: a fight that
	// only a change of the template (or of the other writer) ends.
	EventDriftRepeated = "DriftRepeated"
	// EventTeardownSkipped says that a Bundle deleted with
	// --cascade=foreground went without the teardown of a plugin resource
	// (deorbit's): the garbage collector deletes everything at once, and
	// nothing of the cleanup ran. Argo CD prunes and deletes in foreground by
	// default.
	EventTeardownSkipped = "TeardownSkipped"
	// EventRelabelled says that limbo put back the limbo.dev/bundle label of an
	// object its Bundle controls, which another writer removed or changed:
	// limbo finds a Bundle's objects by that label, and one without it was
	// never deleted in limbo, or deleted at once by the garbage collector when
	// its Bundle went.
	EventRelabelled = "Relabelled"
)

// GetConditions returns the Bundle's conditions, as Flux's and kstatus's
// condition helpers expect of an object.
func (b *Bundle) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces the Bundle's conditions.
func (b *Bundle) SetConditions(conditions []metav1.Condition) { b.Status.Conditions = conditions }

// PluginResource is b's resource named name if it is a plugin resource, nil
// otherwise: the one lookup behind "does the Bundle still declare the cleanup job
// that made this item or Tombstone".
func (b *Bundle) PluginResource(name string) *Resource {
	for i := range b.Spec.Resources {
		if res := &b.Spec.Resources[i]; res.Name == name && res.Plugin != nil {
			return res
		}
	}
	return nil
}
