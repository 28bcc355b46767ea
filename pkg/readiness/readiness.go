package readiness

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/fieldpath"
)

// State is the readiness of an object.
type State string

// The states of an object.
const (
	// Ready: the object is what it was asked to be; its dependents may go ahead.
	Ready State = "Ready"
	// InProgress: the object is getting there, or waiting for something.
	InProgress State = "InProgress"
	// Failed: the object, or the way its status reads, is broken and will not
	// become Ready without help.
	Failed State = "Failed"
)

// Reasons that this package sets itself. Other reasons come from kstatus or
// from the object's Ready condition.
const (
	// ReasonTerminating: the object has a deletionTimestamp.
	ReasonTerminating = "Terminating"
	// ReasonLatestGenerationNotObserved: status.observedGeneration differs from
	// metadata.generation.
	ReasonLatestGenerationNotObserved = "LatestGenerationNotObserved"
	// ReasonNotReady: the Ready condition is not True and has no reason.
	ReasonNotReady = "NotReady"
	// ReasonInvalidStatus: the object's content could not be read, for
	// instance status.conditions is not a list.
	ReasonInvalidStatus = "InvalidStatus"
	// ReasonFieldValueMatches: the Rule's field has the Rule's value.
	ReasonFieldValueMatches = "FieldValueMatches"
	// ReasonFieldValueMismatch: the Rule's field has another value.
	ReasonFieldValueMismatch = "FieldValueMismatch"
	// ReasonFieldNotSet: the Rule's path yields nothing, or null.
	ReasonFieldNotSet = "FieldNotSet"
	// ReasonInvalidRule: the Rule cannot be evaluated on the object.
	ReasonInvalidRule = "InvalidRule"

	// The reasons of a Job that has not completed (jobNotComplete).

	// ReasonJobRunning: the Job has started and has neither completed nor
	// failed.
	ReasonJobRunning = "JobRunning"
	// ReasonJobNotStarted: the Job has no status.startTime yet (kstatus's
	// reason for the same case).
	ReasonJobNotStarted = "JobNotStarted"
	// ReasonJobSuspended: the Job's spec.suspend is true.
	ReasonJobSuspended = "JobSuspended"
	// ReasonJobSucceeding: the Job has SuccessCriteriaMet=True, not yet
	// Complete=True.
	ReasonJobSucceeding = "JobSucceeding"
	// ReasonJobFailing: the Job has FailureTarget=True, not yet Failed=True.
	ReasonJobFailing = "JobFailing"

	// ReasonPodFailed: a Pod in phase Failed (podFailed).
	ReasonPodFailed = "PodFailed"
	// ReasonDeploymentPaused: a Deployment with spec.paused true that has not
	// rolled out (isPaused).
	ReasonDeploymentPaused = "DeploymentPaused"

	// ReasonWaitForFirstConsumer: a PersistentVolumeClaim of a StorageClass that
	// binds on first use, Pending until a Pod that uses it is scheduled
	// (ClaimWaitsForConsumer).
	ReasonWaitForFirstConsumer = "WaitForFirstConsumer"
)

// annotationSelectedNode is set on a claim by the scheduler once a Pod that uses
// it is placed: from then on the claim is provisioned and bound.
const annotationSelectedNode = "volume.kubernetes.io/selected-node"

// PendingClaimClass reports whether obj is a PersistentVolumeClaim that is
// Pending and that no scheduled Pod uses yet, and names its StorageClass. Such a
// claim, of a class whose volumeBindingMode is WaitForFirstConsumer, binds only
// once a Pod that uses it is scheduled: judged by kstatus (Bound or not) it would
// hold what uses it, and so itself, for ever. A claim without a class name (none
// was given and the cluster has no default class) binds to a matching volume
// whenever one exists: not ok.
func PendingClaimClass(obj *unstructured.Unstructured) (class string, ok bool) {
	if obj.GetAPIVersion() != "v1" || obj.GetKind() != "PersistentVolumeClaim" || obj.GetDeletionTimestamp() != nil {
		return "", false
	}
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "Pending" {
		return "", false
	}
	if _, scheduled := obj.GetAnnotations()[annotationSelectedNode]; scheduled {
		return "", false
	}
	class, _, _ = unstructured.NestedString(obj.Object, "spec", "storageClassName")
	return class, class != ""
}

// ClaimWaitsForConsumer is the readiness of a claim that PendingClaimClass
// found Pending, of class, a StorageClass that binds on first use: Ready, so that
// what uses it is created.
func ClaimWaitsForConsumer(class string) Result {
	return Result{State: Ready, Reason: ReasonWaitForFirstConsumer,
		Message: fmt.Sprintf("Pending until a Pod that uses it is scheduled: StorageClass %q binds on first use (volumeBindingMode WaitForFirstConsumer)", class)}
}

// Result is the readiness of an object: a State, a one-word CamelCase Reason and
// a human Message.
type Result struct {
	State   State
	Reason  string
	Message string
}

// Rule is a readiness rule stated on a CRD by the annotations
// limbo.dev/readyWhenFieldPath (a field path such as status.phase, .status.phase
// or {.status.phase}: see package fieldpath) and limbo.dev/readyWhenFieldValue:
// an object is Ready when the path yields the value.
type Rule struct {
	FieldPath, FieldValue string
}

// RuleFromAnnotations returns the Rule stated by the annotations of a
// CustomResourceDefinition: nil and no error when neither annotation is set, an
// error when only one of them is set or when the path is not a valid JSONPath.
// An empty value is a value (the field must be the empty string); an empty path
// is an error. The Rule's FieldPath is in fieldpath's canonical form
// (status.phase), however the annotation writes it.
func RuleFromAnnotations(annotations map[string]string) (*Rule, error) {
	path, hasPath := annotations[v1alpha1.AnnotationReadyWhenFieldPath]
	value, hasValue := annotations[v1alpha1.AnnotationReadyWhenFieldValue]
	switch {
	case !hasPath && !hasValue:
		return nil, nil
	case !hasValue:
		return nil, fmt.Errorf("annotation %s is set but %s is not: set both or neither",
			v1alpha1.AnnotationReadyWhenFieldPath, v1alpha1.AnnotationReadyWhenFieldValue)
	case !hasPath:
		return nil, fmt.Errorf("annotation %s is set but %s is not: set both or neither",
			v1alpha1.AnnotationReadyWhenFieldValue, v1alpha1.AnnotationReadyWhenFieldPath)
	}
	if _, err := fieldpath.Parse(path, true); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", v1alpha1.AnnotationReadyWhenFieldPath, err)
	}
	// Parse accepted the path, so Normalize does too.
	canonical, _ := fieldpath.Normalize(path)
	return &Rule{FieldPath: canonical, FieldValue: value}, nil
}

// Compute returns the readiness of obj, by rule when rule is not nil, else by
// kstatus and limbo's stricter checks (see the package documentation). It never
// panics.
func Compute(obj *unstructured.Unstructured, rule *Rule) (result Result) {
	defer func() {
		if r := recover(); r != nil {
			result = Result{
				State:   Failed,
				Reason:  ReasonInvalidStatus,
				Message: fmt.Sprintf("cannot compute readiness: %v", r),
			}
		}
	}()
	if obj == nil || obj.Object == nil {
		return Result{State: Failed, Reason: ReasonInvalidStatus, Message: "no object"}
	}
	if rule != nil {
		if isTerminating(obj) {
			return Result{State: InProgress, Reason: ReasonTerminating, Message: "Resource scheduled for deletion"}
		}
		// The rule judges the status; a status that says it describes an older
		// spec (status.observedGeneration behind) is judged once it catches up,
		// as without a rule: right after limbo's apply, the previous
		// generation's "Running" would let dependents and the orphan gate go.
		if message, behind := generationBehind(obj); behind {
			return Result{State: InProgress, Reason: ReasonLatestGenerationNotObserved, Message: message}
		}
		return computeRule(obj, rule)
	}
	return computeStatus(obj)
}

// computeStatus computes readiness with kstatus and adds limbo's checks.
func computeStatus(obj *unstructured.Unstructured) Result {
	if err := checkShape(obj.Object); err != nil {
		return Result{State: Failed, Reason: ReasonInvalidStatus, Message: err.Error()}
	}
	ks, err := kstatusCompute(obj)
	if err != nil {
		return Result{State: Failed, Reason: ReasonInvalidStatus, Message: err.Error()}
	}
	result := fromKstatus(ks)
	if ks.Status == status.TerminatingStatus {
		return result
	}

	if message, behind := generationBehind(obj); behind {
		return Result{State: InProgress, Reason: ReasonLatestGenerationNotObserved, Message: message}
	}
	if message, behind := readyConditionBehind(obj); behind {
		return Result{State: InProgress, Reason: ReasonLatestGenerationNotObserved, Message: message}
	}

	// A Job is Ready once it has completed, not once it has started.
	if result.State != Failed {
		if notComplete, ok := jobNotComplete(obj); ok {
			return notComplete
		}
	}

	if failed, ok := podFailed(obj); ok {
		return failed
	}
	if result.State == InProgress && isPaused(obj) {
		return Result{State: InProgress, Reason: ReasonDeploymentPaused,
			Message: "Deployment is paused (spec.paused): its rollout waits for kubectl rollout resume"}
	}

	if result.State == Failed || status.GetLegacyConditionsFn(obj) != nil {
		return result
	}
	cond, found := findCondition(obj, "Ready")
	if !found || cond.status == "True" {
		return result
	}
	reason := cond.reason
	if reason == "" {
		reason = ReasonNotReady
	}
	var message string
	switch {
	case cond.reason != "" && cond.message != "":
		message = cond.reason + ": " + cond.message
	case cond.reason != "":
		message = cond.reason
	case cond.message != "":
		message = cond.message
	default:
		message = fmt.Sprintf("Ready condition is %q", cond.status)
	}
	return Result{State: InProgress, Reason: reason, Message: message}
}

// checkShape checks the fields kstatus decodes into typed conditions, so that a
// malformed status is reported in plain words rather than by the decoder
// ("cannot restore slice from string").
func checkShape(obj map[string]interface{}) error {
	st, found := obj["status"]
	if !found || st == nil {
		return nil
	}
	stMap, ok := st.(map[string]interface{})
	if !ok {
		return fmt.Errorf("status is %s, not an object", fieldpath.TypeOf(st))
	}
	conds, found := stMap["conditions"]
	if !found || conds == nil {
		return nil
	}
	list, ok := conds.([]interface{})
	if !ok {
		return fmt.Errorf("status.conditions is %s, not a list", fieldpath.TypeOf(conds))
	}
	for i, c := range list {
		m, ok := c.(map[string]interface{})
		if !ok {
			return fmt.Errorf("status.conditions[%d] is %s, not an object", i, fieldpath.TypeOf(c))
		}
		for _, field := range []string{"type", "status", "reason", "message"} {
			if v, found := m[field]; found && v != nil {
				if _, ok := v.(string); !ok {
					return fmt.Errorf("status.conditions[%d].%s is %s, not a string", i, field, fieldpath.TypeOf(v))
				}
			}
		}
	}
	return nil
}

// kstatusCompute calls kstatus, turning a panic (kstatus asserts the types of
// some fields of Pods) into an error.
func kstatusCompute(obj *unstructured.Unstructured) (res *status.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("cannot compute status: %v", r)
		}
	}()
	res, err = status.Compute(obj)
	if err != nil {
		return nil, fmt.Errorf("cannot compute status: %w", err)
	}
	if res == nil {
		err = errors.New("cannot compute status: no result")
	}
	return res, err
}

// fromKstatus maps a kstatus result to a Result.
func fromKstatus(ks *status.Result) Result {
	result := Result{Reason: string(ks.Status), Message: ks.Message}
	for _, c := range ks.Conditions {
		if c.Reason != "" {
			result.Reason = c.Reason
			break
		}
	}
	switch ks.Status {
	case status.CurrentStatus:
		result.State = Ready
	case status.FailedStatus:
		result.State = Failed
	case status.TerminatingStatus:
		result.State = InProgress
		result.Reason = ReasonTerminating
	default: // InProgress, NotFound, Unknown, and anything a later kstatus adds
		result.State = InProgress
	}
	if result.Message == "" {
		result.Message = "kstatus: " + string(ks.Status)
	}
	return result
}

// isTerminating tells whether obj has a deletionTimestamp, as kstatus does.
func isTerminating(obj *unstructured.Unstructured) bool {
	ts, found, err := unstructured.NestedString(obj.Object, "metadata", "deletionTimestamp")
	return err == nil && found && ts != ""
}

// generationBehind tells whether status.observedGeneration is present and
// differs from metadata.generation, with the message to report.
func generationBehind(obj *unstructured.Unstructured) (string, bool) {
	generation, ok := nestedInt(obj.Object, "metadata", "generation")
	if !ok {
		return "", false
	}
	observed, ok := nestedInt(obj.Object, "status", "observedGeneration")
	if !ok || observed == generation {
		return "", false
	}
	if observed > generation {
		return fmt.Sprintf("status.observedGeneration %d is ahead of generation %d", observed, generation), true
	}
	return fmt.Sprintf("status.observedGeneration %d is behind generation %d", observed, generation), true
}

// readyConditionBehind reports a Ready condition that states the generation it
// was written for (its own observedGeneration, as cert-manager's and many
// other controllers' conditions do, without status.observedGeneration) and
// that is not the object's generation: a Ready=True of the previous spec.
func readyConditionBehind(obj *unstructured.Unstructured) (string, bool) {
	generation, ok := nestedInt(obj.Object, "metadata", "generation")
	if !ok {
		return "", false
	}
	conds, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "conditions")
	list, _ := conds.([]interface{})
	for _, c := range list {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != "Ready" {
			continue
		}
		observed, ok := nestedInt(m, "observedGeneration")
		if !ok || observed == generation {
			return "", false
		}
		return fmt.Sprintf("the Ready condition's observedGeneration %d is not generation %d", observed, generation), true
	}
	return "", false
}

// nestedInt reads an integer field, tolerating the numeric types unstructured
// content may hold.
func nestedInt(obj map[string]interface{}, fields ...string) (int64, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if err != nil || !found {
		return 0, false
	}
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	}
	return 0, false
}

type condition struct {
	status, reason, message string
}

// findCondition returns the first condition of type condType in
// status.conditions, skipping entries that are not maps.
func findCondition(obj *unstructured.Unstructured, condType string) (condition, bool) {
	st, ok := obj.Object["status"].(map[string]interface{})
	if !ok {
		return condition{}, false
	}
	conds, ok := st["conditions"].([]interface{})
	if !ok {
		return condition{}, false
	}
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok {
			continue
		}
		if t, _ := m["type"].(string); t != condType {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return condition{status: s, reason: r, message: msg}, true
	}
	return condition{}, false
}

// jobGroupKind is the kind jobNotComplete applies to, in every version, as
// kstatus matches it.
var jobGroupKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// jobNotComplete is the Job rule: a Job is Ready only once it has the condition
// Complete=True. kstatus calls a Job Current as soon as it has started ("Job in
// progress"), which let a Deployment that depends on a migration Job be applied
// while the migration ran, and the orphan gate open while the Job could still
// fail (Flux met the same: fluxcd/kustomize-controller#553, fixed by a Job
// status reader that waits for completion).
//
// For a Job without Complete=True or Failed=True it returns the InProgress
// result that replaces kstatus's verdict, and true; for any other object, and
// for a Job that has finished (kstatus's "Job Completed" and Failed/JobFailed
// stand), false. SuccessCriteriaMet=True (set before Complete since Kubernetes
// 1.31) does not count: the Job's remaining pods may still be running until
// Complete follows, and a dependent should not start beside them. Likewise
// FailureTarget=True is InProgress until Failed=True makes it Failed.
func jobNotComplete(obj *unstructured.Unstructured) (Result, bool) {
	if obj.GroupVersionKind().GroupKind() != jobGroupKind {
		return Result{}, false
	}
	isTrue := func(condType string) (condition, bool) {
		c, found := findCondition(obj, condType)
		return c, found && c.status == "True"
	}
	if _, complete := isTrue("Complete"); complete {
		return Result{}, false
	}
	if _, failed := isTrue("Failed"); failed {
		return Result{}, false
	}
	if _, met := isTrue("SuccessCriteriaMet"); met {
		return Result{State: InProgress, Reason: ReasonJobSucceeding,
			Message: "Job met its success criteria, waiting for Complete (its remaining pods are terminating)"}, true
	}
	if c, failing := isTrue("FailureTarget"); failing {
		why := ""
		if c.reason != "" {
			why = " (" + c.reason + ")"
		}
		return Result{State: InProgress, Reason: ReasonJobFailing,
			Message: "Job failing" + why + ", waiting for Failed (its remaining pods are terminating)"}, true
	}
	if suspend, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); suspend {
		return Result{State: InProgress, Reason: ReasonJobSuspended, Message: "Job suspended: spec.suspend is true"}, true
	}
	if start, _, _ := unstructured.NestedString(obj.Object, "status", "startTime"); start == "" {
		return Result{State: InProgress, Reason: ReasonJobNotStarted, Message: "Job not started"}, true
	}
	active, _ := nestedInt(obj.Object, "status", "active")
	succeeded, _ := nestedInt(obj.Object, "status", "succeeded")
	message := fmt.Sprintf("Job running: %d active, %d succeeded", active, succeeded)
	if completions, ok := nestedInt(obj.Object, "spec", "completions"); ok {
		message += fmt.Sprintf(" of %d", completions)
	}
	if failed, _ := nestedInt(obj.Object, "status", "failed"); failed > 0 {
		message += fmt.Sprintf(", %d failed", failed)
	}
	return Result{State: InProgress, Reason: ReasonJobRunning, Message: message}, true
}

// podGroupKind and deploymentGroupKind are the kinds podFailed and isPaused
// apply to.
var (
	podGroupKind        = schema.GroupKind{Kind: "Pod"}
	deploymentGroupKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
)

// podFailed is the Pod rule: a Pod in phase Failed is Failed, as a Job that
// failed is. kstatus calls it Current ("Pod has completed, but not
// successfully"): a migration run as a bare Pod that failed let its dependents
// be applied and the orphan gate open.
func podFailed(obj *unstructured.Unstructured) (Result, bool) {
	if obj.GroupVersionKind().GroupKind() != podGroupKind {
		return Result{}, false
	}
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "Failed" {
		return Result{}, false
	}
	why := []string{"Pod failed"}
	for _, field := range []string{"reason", "message"} {
		if v, _, _ := unstructured.NestedString(obj.Object, "status", field); v != "" {
			why = append(why, v)
		}
	}
	return Result{State: Failed, Reason: ReasonPodFailed, Message: strings.Join(why, ": ")}, true
}

// isPaused tells a Deployment with spec.paused true: one that kstatus finds in
// progress waits for kubectl rollout resume, not for a fault to clear, and says
// so (kstatus's reasons, LessReplicas or ReplicaSetNotAvailable, sent users
// looking for one). It stays InProgress: its dependents wait for the template
// limbo applied, and a paused rollout has not applied it.
func isPaused(obj *unstructured.Unstructured) bool {
	if obj.GroupVersionKind().GroupKind() != deploymentGroupKind {
		return false
	}
	paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused")
	return paused
}

// computeRule evaluates rule on obj.
func computeRule(obj *unstructured.Unstructured, rule *Rule) Result {
	jp, err := fieldpath.Parse(rule.FieldPath, true)
	if err != nil {
		return Result{State: Failed, Reason: ReasonInvalidRule,
			Message: fmt.Sprintf("readiness rule path %q: %v", rule.FieldPath, err)}
	}
	sets, err := jp.FindResults(obj.Object)
	if err != nil {
		return Result{State: Failed, Reason: ReasonInvalidRule,
			Message: fmt.Sprintf("evaluating %s: %v", rule.FieldPath, err)}
	}
	var values []interface{}
	for _, set := range sets {
		for _, v := range set {
			if !v.IsValid() || !v.CanInterface() {
				continue
			}
			values = append(values, v.Interface())
		}
	}
	switch len(values) {
	case 0:
		return notSet(rule)
	case 1:
	default:
		return Result{State: Failed, Reason: ReasonInvalidRule,
			Message: fmt.Sprintf("%s yields %d values, the readiness rule needs exactly one", rule.FieldPath, len(values))}
	}
	if values[0] == nil {
		return notSet(rule)
	}
	text, err := formatValue(values[0])
	if err != nil {
		return Result{State: Failed, Reason: ReasonInvalidRule,
			Message: fmt.Sprintf("evaluating %s: %v", rule.FieldPath, err)}
	}
	if text != rule.FieldValue {
		return Result{State: InProgress, Reason: ReasonFieldValueMismatch,
			Message: fmt.Sprintf("%s is %q, waiting for %q", rule.FieldPath, text, rule.FieldValue)}
	}
	return Result{State: Ready, Reason: ReasonFieldValueMatches,
		Message: fmt.Sprintf("%s is %q", rule.FieldPath, text)}
}

func notSet(rule *Rule) Result {
	return Result{State: InProgress, Reason: ReasonFieldNotSet,
		Message: fmt.Sprintf("%s is not set", rule.FieldPath)}
}

// formatValue returns the text of a value: a string as it is, anything else as
// compact JSON.
func formatValue(v interface{}) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
