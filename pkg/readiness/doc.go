// Package readiness decides whether a live Kubernetes object is Ready, the
// question the Bundle reconciler asks before it lets a dependent resource go
// ahead (DESIGN.md §3 step 5).
//
// Compute answers with a Result: a State (Ready, InProgress or Failed), a
// one-word Reason and a human message. It never panics, whatever the shape of the
// object: a status that is not a map, conditions that are not a list, fields of
// the wrong type and so on give Failed (or InProgress) with a message.
//
// # kstatus
//
// Without a Rule, readiness is computed with kstatus
// (github.com/fluxcd/cli-utils/pkg/kstatus/status), so Deployments,
// StatefulSets, DaemonSets, ReplicaSets, Jobs, PVCs, Services, Pods, PDBs and
// any custom resource with standard conditions work without per-kind code here
// (exceptions: Jobs, failed Pods and paused Deployments, below):
//
//	kstatus      readiness
//	Current      Ready
//	InProgress   InProgress
//	Failed       Failed
//	Terminating  InProgress (reason Terminating)
//	NotFound     InProgress
//	Unknown      InProgress
//
// kstatus's message is kept. The Reason is the reason of the Reconciling or
// Stalled condition kstatus reports with its verdict when there is one (such as
// LessReplicas or JobFailed), else the kstatus status itself (Current,
// InProgress, Failed). An error from kstatus, which it returns for malformed
// content such as conditions that are not a list, is Failed with reason
// InvalidStatus.
//
// # Stricter than kstatus
//
// limbo adds these checks on top of kstatus's verdict; they only ever make an
// object less ready, and they are skipped for an object being deleted, which
// is InProgress/Terminating whatever its status says.
//
// Observed generation: an object whose status.observedGeneration is present is
// Ready only while it equals metadata.generation. Otherwise it is InProgress,
// reason LatestGenerationNotObserved, with the message
//
//	status.observedGeneration 3 is behind generation 4
//
// ("is ahead of" in the odd case of a larger observedGeneration).
// kstatus makes the same check (for every kind), with its own message, which
// this one replaces.
//
// Ready condition: an object of a kind that kstatus has no specific rules for
// (in practice a custom resource) and that has a condition of type Ready in
// status.conditions is Ready only while that condition's status is "True".
// Otherwise it is InProgress, with the condition's reason (NotReady when it has
// none) and the message "<reason>: <message>" (only the one that is set when the
// other is empty; `Ready condition is "<status>"` when both are). If kstatus said
// Failed, for instance because Stalled is True, the object stays Failed: a
// Ready condition that is False is usually transient, Stalled is not.
//
// The Ready check is not applied to the kinds kstatus has specific rules for
// (Pod, Deployment, Job, ...): their verdict is kstatus's. This matters for
// Pods, the one such kind with a Ready condition: a Pod that has run to
// completion has Ready=False for good, yet kstatus rightly calls it Current.
//
// Jobs: a batch Job is Ready only once it has the condition Complete=True.
// kstatus calls a Job Current as soon as it has started ("Job in progress"),
// which would let what depends on a migration Job go ahead, and the orphan
// gate open, while the migration runs or is about to fail (Flux's
// kustomize-controller met the same, fluxcd/kustomize-controller#553, and
// waits for completion since). A Job with Failed=True keeps kstatus's verdict,
// Failed with reason JobFailed; one with Complete=True keeps kstatus's
// "Job Completed" message. Any other Job is InProgress, the first that applies:
//
//	SuccessCriteriaMet=True  JobSucceeding  Job met its success criteria, waiting for Complete (...)
//	FailureTarget=True       JobFailing     Job failing (DeadlineExceeded), waiting for Failed (...)
//	spec.suspend true        JobSuspended   Job suspended: spec.suspend is true
//	no status.startTime      JobNotStarted  Job not started
//	otherwise                JobRunning     Job running: 1 active, 0 succeeded of 1[, 2 failed]
//
// SuccessCriteriaMet (set before Complete since Kubernetes 1.31, and by a
// success policy) is not enough: the Job's remaining pods may still run until
// they have terminated and Complete follows, and a dependent should not start
// beside them. A Job's status has no observedGeneration, so the generation
// check does not apply to it: Complete=True is final, whatever changes to the
// Job's metadata (its pod template cannot change) bump its generation.
//
// Pods: a Pod in phase Failed is Failed, reason PodFailed, with the message
// "Pod failed[: <status.reason>][: <status.message>]". kstatus calls it Current
// ("Pod has completed, but not successfully"), which let what depends on a
// migration run as a bare Pod go ahead after the migration failed.
//
// Deployments: one with spec.paused true that kstatus finds in progress is
// InProgress with reason DeploymentPaused ("Deployment is paused (spec.paused):
// its rollout waits for kubectl rollout resume"), not kstatus's LessReplicas or
// ReplicaSetNotAvailable: nothing is wrong, the rollout waits for its user. It
// is not Ready: the template limbo applied has not rolled out. One paused after
// its rollout completed keeps kstatus's verdict, Current.
//
// # Rules
//
// A CustomResourceDefinition can state the readiness rule of its objects with
// the annotations limbo.dev/readyWhenFieldPath and limbo.dev/readyWhenFieldValue
// (RuleFromAnnotations). The path is a field path as package fieldpath reads it
// (documented in docs/bundle-api.md, "Field paths"): status.phase,
// .status.phase, {.status.phase} and $.status.phase alike, and
// status.conditions[?(@.type=="Synced")].status or ['status'].phase; missing
// keys yield nothing rather than an error.
//
// With a Rule, kstatus and the checks above are not used: the object is Ready
// exactly when the path yields one value whose text equals FieldValue. The text
// of a string is the string itself; of anything else it is compact JSON, which
// for numbers and booleans is what fmt.Sprint gives (3, 2.5, true), and for maps
// and lists is their JSON. Otherwise the object is InProgress:
//
//	status.phase is "Pending", waiting for "Running"   (reason FieldValueMismatch)
//	status.phase is not set                            (reason FieldNotSet)
//
// A null value counts as not set. A path that yields more than one value, or
// whose evaluation fails (for instance it indexes into something that is not a
// list), gives Failed. The one exception to "the rule decides" is deletion: an
// object with a deletionTimestamp is InProgress, reason Terminating, as without
// a rule.
package readiness
