package v1alpha1

// The annotations, labels and finalizers of DESIGN.md §2.
const (
	// AnnotationDeletionDelay opts an object into soft delete: a Go duration ≥ 0
	// that the object waits in limbo after it leaves its Bundle.
	AnnotationDeletionDelay = "limbo.dev/deletionDelay"
	// AnnotationDeletionTimestamp is the RFC 3339 UTC time a countdown started.
	// Only the controller sets it; a template that sets it is a spec error.
	AnnotationDeletionTimestamp = "limbo.dev/deletionTimestamp"
	// AnnotationAdopt set to "true" on a template adopts an existing object that has
	// no controller.
	AnnotationAdopt = "limbo.dev/adopt"
	// AnnotationPluginResource is on a plugin's object item in limbo (an object the
	// plugin inventories but does not own): "<namespace>/<bundle>/<resource>", the
	// plugin resource whose countdown it is. Such items never carry LabelBundle: they
	// are not managed objects, and only their Bundle's pass decides them.
	AnnotationPluginResource = "limbo.dev/pluginResource"
	// AnnotationGeneratedBy is on an object a generator plugin made: the name of
	// the Bundle's plugin resource that made it. A teardown deletes the object in
	// that resource's wave (dependents first), not before everything else.
	AnnotationGeneratedBy = "limbo.dev/generatedBy"
	// AnnotationReleased marks an object a Bundle's teardown released to limbo
	// (the time it did): the reaper acts only on such objects. An object the
	// garbage collector orphaned (--cascade=orphan) looks the same otherwise, and
	// is never deleted.
	AnnotationReleased = "limbo.dev/released"
	// AnnotationTeardownStatePrefix, followed by a plugin resource's name, is on a
	// Bundle being torn down: the state of that resource's teardown (a plugin's
	// own, opaque), so that a restarted controller resumes it.
	AnnotationTeardownStatePrefix = "teardown.limbo.dev/"
	// AnnotationTeardownDonePrefix, followed by a plugin resource's name, is
	// "true" on a Bundle being torn down once that resource's teardown is done:
	// later passes neither call the plugin again nor resolve its spec, whose
	// references may name objects the teardown's waves have deleted since.
	AnnotationTeardownDonePrefix = "teardown-done.limbo.dev/"
	// AnnotationTeardownOf is the UID of the Bundle whose teardown wrote the
	// teardown annotations beside it (state, done marks, warnings). A copy of
	// a Bundle taken during its teardown (a backup restored) carries another
	// Bundle's: they are not read, and its own teardown starts afresh.
	AnnotationTeardownOf = "teardown-of.limbo.dev"
	// AnnotationTeardownWarningPrefix, followed by a plugin resource's name,
	// holds the warning that resource's teardown ended with (a deorbit that
	// gave up, naming the debris), which DeletionFailure shows for the rest of
	// the teardown.
	AnnotationTeardownWarningPrefix = "teardown-warning.limbo.dev/"
	// AnnotationReadyWhenFieldPath and AnnotationReadyWhenFieldValue, on a
	// CustomResourceDefinition, state the readiness rule of its objects: the JSONPath
	// (status.phase, .status.phase or {.status.phase}) must yield the value.
	AnnotationReadyWhenFieldPath  = "limbo.dev/readyWhenFieldPath"
	AnnotationReadyWhenFieldValue = "limbo.dev/readyWhenFieldValue"

	// LabelBundle names the Bundle that manages, or last managed, an object.
	LabelBundle = "limbo.dev/bundle"
	// LabelPendingDeletion is "true" while a countdown runs, so the reaper can find
	// objects in limbo across kinds.
	LabelPendingDeletion = "limbo.dev/pending-deletion"

	// FinalizerTeardown holds a Bundle while its content is removed in order.
	FinalizerTeardown = "limbo.dev/teardown"
	// AnnotationTornDown is the UID of a Bundle whose teardown ended, set by
	// the write that removes FinalizerTeardown: the admission policy puts back
	// the finalizer that any other write removes (a PUT of the manifest). A
	// copy of a Bundle carries its source's UID, which the policy ignores.
	AnnotationTornDown = "limbo.dev/tornDown"
	// FinalizerHardDelete holds a Tombstone until its external item is deleted.
	FinalizerHardDelete = "limbo.dev/hard-delete"

	// FieldManager is the server-side apply field manager of every write limbo makes.
	FieldManager = "limbo"
)

// AnnotationExpeditedFrom is written by kubectl limbo expedite, not by the
// controller (it is not one of DESIGN.md §2's names): the
// limbo.dev/deletionTimestamp it moved back, when the countdown really started,
// so that kubectl limbo pending shows the time spent in limbo rather than the
// delay. The controller never reads it: deadlines come from the stamp alone;
// its cancels remove it with the limbo marks (softdelete.OutOfLimboPatch), but
// it is no mark itself. It counts only while it is later than the stamp (a
// countdown started again since is later than it).
const AnnotationExpeditedFrom = "limbo.dev/expeditedFrom"

// TeardownEnded reports whether annotations, a Bundle's, mark the teardown of
// its plugin resource done (AnnotationTeardownDonePrefix), with the warning it
// ended with (AnnotationTeardownWarningPrefix). A mark of any value but ""
// says done: one written otherwise than "true" still does. The controller,
// which then never calls the plugin again, and kubectl limbo, which then says
// nothing deletes the resource's items, read the marks by this one rule.
func TeardownEnded(annotations map[string]string, resource string) (warning string, ended bool) {
	if annotations[AnnotationTeardownDonePrefix+resource] == "" {
		return "", false
	}
	return annotations[AnnotationTeardownWarningPrefix+resource], true
}
