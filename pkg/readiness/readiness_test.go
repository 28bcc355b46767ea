package readiness

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object decodes JSON into an Unstructured the way objects read from the API
// server are decoded (integers become int64).
func object(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("bad test object: %v\n%s", err, js)
	}
	return u
}

// raw builds an Unstructured from content that JSON could not express or that
// UnmarshalJSON would reject.
func raw(content map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: content}
}

const (
	deploymentReady0 = `{"apiVersion":"apps/v1","kind":"Deployment",
		"metadata":{"name":"app","namespace":"ns","generation":2},
		"spec":{"replicas":0,"progressDeadlineSeconds":600},
		"status":{"observedGeneration":2,"conditions":[
			{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."},
			{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"ReplicaSet \"app-1\" has successfully progressed."}]}}`
)

func TestComputeKstatus(t *testing.T) {
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		state   State
		reason  string
		message string // exact; "" means only "not empty" is checked
	}{
		{
			name:    "ConfigMap is always ready",
			obj:     object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"a":"b"}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is always ready",
		},
		{
			name:    "Secret is always ready",
			obj:     object(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is always ready",
		},
		{
			name:    "Deployment with 0 replicas, observedGeneration current",
			obj:     object(t, deploymentReady0),
			state:   Ready,
			reason:  "Current",
			message: "Deployment is available. Replicas: 0",
		},
		{
			// kstatus needs the Available condition, which the deployment
			// controller always sets when it observes a generation.
			name: "Deployment with 0 replicas and no conditions yet",
			obj: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","generation":1},
				"spec":{"replicas":0},"status":{"observedGeneration":1}}`),
			state:   InProgress,
			reason:  "DeploymentNotAvailable",
			message: "Deployment not Available",
		},
		{
			name: "Deployment whose observedGeneration is behind",
			obj: object(t, strings.Replace(deploymentReady0,
				`"status":{"observedGeneration":2`, `"status":{"observedGeneration":1`, 1)),
			state:   InProgress,
			reason:  "LatestGenerationNotObserved",
			message: "status.observedGeneration 1 is behind generation 2",
		},
		{
			name: "Deployment with 2 replicas, 0 available",
			obj: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","generation":1},
				"spec":{"replicas":2,"progressDeadlineSeconds":600},
				"status":{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"unavailableReplicas":2,"conditions":[
					{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable"},
					{"type":"Progressing","status":"True","reason":"ReplicaSetUpdated"}]}}`),
			state:   InProgress,
			reason:  "LessAvailable",
			message: "Available: 0/2",
		},
		{
			name: "Deployment past its progress deadline",
			obj: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","generation":1},
				"spec":{"replicas":1,"progressDeadlineSeconds":600},
				"status":{"observedGeneration":1,"conditions":[
					{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}}`),
			state:   Failed,
			reason:  "ProgressDeadlineExceeded",
			message: "Progress deadline exceeded",
		},
		{
			name:    "PVC pending",
			obj:     object(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"p"},"status":{"phase":"Pending"}}`),
			state:   InProgress,
			reason:  "NotBound",
			message: "PVC is not Bound. phase: Pending",
		},
		{
			name:    "LoadBalancer Service without cluster IP",
			obj:     object(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"LoadBalancer"}}`),
			state:   InProgress,
			reason:  "NoIPAssigned",
			message: "ClusterIP not set. Service type: LoadBalancer",
		},
		{
			// Ready=False for good after completion: the Ready check is not
			// applied to kinds kstatus knows.
			name: "Pod that completed keeps kstatus's verdict",
			obj: object(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
				"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","reason":"PodCompleted"}]}}`),
			state:   Ready,
			reason:  "Current",
			message: "Pod has completed successfully",
		},
		{
			name:    "custom resource with no status",
			obj:     object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":1},"spec":{"size":1}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is current",
		},
		{
			name: "custom resource with Ready=False",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":3},
				"status":{"observedGeneration":3,"conditions":[
					{"type":"Ready","status":"False","reason":"Provisioning","message":"waiting for a volume"}]}}`),
			state:   InProgress,
			reason:  "Provisioning",
			message: "Provisioning: waiting for a volume",
		},
		{
			name: "custom resource with Ready=False and a reason only",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
				"status":{"conditions":[{"type":"Ready","status":"False","reason":"Provisioning"}]}}`),
			state:   InProgress,
			reason:  "Provisioning",
			message: "Provisioning",
		},
		{
			name: "custom resource with Ready=False and a message only",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
				"status":{"conditions":[{"type":"Ready","status":"False","message":"waiting"}]}}`),
			state:   InProgress,
			reason:  "NotReady",
			message: "waiting",
		},
		{
			name: "custom resource with Ready=Unknown",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
				"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`),
			state:   InProgress,
			reason:  "NotReady",
			message: `Ready condition is "Unknown"`,
		},
		{
			// kstatus calls this Current: it only reads True, False and Unknown.
			name: "custom resource with a Ready status that is not True",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
				"status":{"conditions":[{"type":"Ready","status":"true"}]}}`),
			state:   InProgress,
			reason:  "NotReady",
			message: `Ready condition is "true"`,
		},
		{
			name: "custom resource with Ready=True but observedGeneration behind",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":5},
				"status":{"observedGeneration":4,"conditions":[{"type":"Ready","status":"True","reason":"Succeeded"}]}}`),
			state:   InProgress,
			reason:  "LatestGenerationNotObserved",
			message: "status.observedGeneration 4 is behind generation 5",
		},
		{
			name: "custom resource whose Ready=True condition is of an older generation",
			obj: object(t, `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"c","generation":3},
				"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","observedGeneration":2}]}}`),
			state:   InProgress,
			reason:  "LatestGenerationNotObserved",
			message: "the Ready condition's observedGeneration 2 is not generation 3",
		},
		{
			name: "custom resource whose Ready=True condition is of a later generation",
			obj: object(t, `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"c","generation":3},
				"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","observedGeneration":4}]}}`),
			state:   InProgress,
			reason:  "LatestGenerationNotObserved",
			message: "the Ready condition's observedGeneration 4 is not generation 3",
		},
		{
			// Another condition's generation says nothing of the Ready one's.
			name: "custom resource whose Ready=True condition is of an older generation than another condition",
			obj: object(t, `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"c","generation":3},
				"status":{"conditions":[{"type":"Issuing","status":"False","reason":"Done","observedGeneration":3},
				{"type":"Ready","status":"True","reason":"Ready","observedGeneration":2}]}}`),
			state:   InProgress,
			reason:  "LatestGenerationNotObserved",
			message: "the Ready condition's observedGeneration 2 is not generation 3",
		},
		{
			name: "custom resource whose Ready=True condition is of its generation",
			obj: object(t, `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"c","generation":3},
				"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","observedGeneration":3}]}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is Ready",
		},
		{
			name: "custom resource without conditions, observedGeneration behind",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":2},
				"status":{"observedGeneration":1}}`),
			state:   InProgress,
			reason:  "LatestGenerationNotObserved",
			message: "status.observedGeneration 1 is behind generation 2",
		},
		{
			name: "custom resource with Ready=True, current",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":5},
				"status":{"observedGeneration":5,"conditions":[{"type":"Ready","status":"True","reason":"Succeeded"}]}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is Ready",
		},
		{
			name: "custom resource with Ready=True but Reconciling=True",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
				"status":{"conditions":[{"type":"Ready","status":"True"},
					{"type":"Reconciling","status":"True","reason":"Progressing","message":"upgrading"}]}}`),
			state:   InProgress,
			reason:  "Progressing",
			message: "upgrading",
		},
		{
			name: "custom resource with Stalled=True stays Failed",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":2},
				"status":{"observedGeneration":2,"conditions":[
					{"type":"Ready","status":"False","reason":"BadConfig","message":"size must be positive"},
					{"type":"Stalled","status":"True","reason":"BadConfig","message":"size must be positive"}]}}`),
			state:   Failed,
			reason:  "BadConfig",
			message: "size must be positive",
		},
		{
			name: "custom resource being deleted",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget",
				"metadata":{"name":"w","generation":2,"deletionTimestamp":"2026-01-01T00:00:00Z"},
				"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"False","reason":"Deleting"}]}}`),
			state:   InProgress,
			reason:  "Terminating",
			message: "Resource scheduled for deletion",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.obj, nil)
			if got.State != tt.state || got.Reason != tt.reason {
				t.Errorf("got %+v, want state %s, reason %s", got, tt.state, tt.reason)
			}
			if tt.message != "" && got.Message != tt.message {
				t.Errorf("message = %q, want %q", got.Message, tt.message)
			}
			if got.Message == "" {
				t.Errorf("empty message in %+v", got)
			}
		})
	}
}

// TestComputeJob: a Job is Ready only once it has Complete=True (jobNotComplete);
// kstatus alone calls a Job that has started Current. Failed=True stays
// kstatus's Failed.
func TestComputeJob(t *testing.T) {
	// job returns a batch/v1 Job of generation 1 with the given spec and
	// status (JSON object bodies).
	job := func(spec, status string) *unstructured.Unstructured {
		return object(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate","namespace":"ns","generation":1},
			"spec":`+spec+`,"status":`+status+`}`)
	}
	const (
		oneOfOne = `{"completions":1,"parallelism":1,"backoffLimit":6}`
		started  = `"startTime":"2026-01-01T00:00:00Z"`
	)
	tests := []computeCase{
		{
			// kstatus: Current, "Job in progress".
			name:    "running",
			obj:     job(oneOfOne, `{`+started+`,"active":1,"ready":1}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 1 active, 0 succeeded of 1",
		},
		{
			name:    "running, retrying after failed pods",
			obj:     job(oneOfOne, `{`+started+`,"active":1,"failed":2}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 1 active, 0 succeeded of 1, 2 failed",
		},
		{
			name:    "running, some completions done",
			obj:     job(`{"completions":3,"parallelism":1}`, `{`+started+`,"active":1,"succeeded":2}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 1 active, 2 succeeded of 3",
		},
		{
			// A work queue Job: no completions, done when a pod succeeds and
			// all have terminated.
			name:    "running work queue, one pod succeeded",
			obj:     job(`{"parallelism":2}`, `{`+started+`,"active":1,"succeeded":1}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 1 active, 1 succeeded",
		},
		{
			// Started, but its pod not yet created (or not counted yet).
			name:    "started, no pod counted yet",
			obj:     job(oneOfOne, `{`+started+`}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 0 active, 0 succeeded of 1",
		},
		{
			name:    "not started",
			obj:     job(oneOfOne, `{}`),
			state:   InProgress,
			reason:  "JobNotStarted",
			message: "Job not started",
		},
		{
			name:    "not started, no status",
			obj:     object(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate","generation":1},"spec":{"completions":1}}`),
			state:   InProgress,
			reason:  "JobNotStarted",
			message: "Job not started",
		},
		{
			name: "created suspended",
			obj: job(`{"completions":1,"parallelism":1,"suspend":true}`, `{"conditions":[
				{"type":"Suspended","status":"True","reason":"JobSuspended","message":"Job suspended"}]}`),
			state:   InProgress,
			reason:  "JobSuspended",
			message: "Job suspended: spec.suspend is true",
		},
		{
			// kstatus: Current, as the startTime is still there.
			name: "suspended after it started",
			obj: job(`{"completions":1,"parallelism":1,"suspend":true}`, `{`+started+`,"conditions":[
				{"type":"Suspended","status":"True","reason":"JobSuspended","message":"Job suspended"}]}`),
			state:   InProgress,
			reason:  "JobSuspended",
			message: "Job suspended: spec.suspend is true",
		},
		{
			// Suspended before the Job controller saw it.
			name:    "suspended, no condition yet",
			obj:     job(`{"completions":1,"parallelism":1,"suspend":true}`, `{`+started+`,"active":1}`),
			state:   InProgress,
			reason:  "JobSuspended",
			message: "Job suspended: spec.suspend is true",
		},
		{
			name: "resumed and running",
			obj: job(`{"completions":1,"parallelism":1,"suspend":false}`, `{`+started+`,"active":1,"conditions":[
				{"type":"Suspended","status":"False","reason":"JobResumed","message":"Job resumed"}]}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 1 active, 0 succeeded of 1",
		},
		{
			// Jobs do not write Complete=False; one that did is not complete.
			name:    "Complete=False",
			obj:     job(oneOfOne, `{`+started+`,"active":1,"conditions":[{"type":"Complete","status":"False"}]}`),
			state:   InProgress,
			reason:  "JobRunning",
			message: "Job running: 1 active, 0 succeeded of 1",
		},
		{
			name: "failed",
			obj: job(oneOfOne, `{`+started+`,"failed":7,"conditions":[
				{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"},
				{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}`),
			state:   Failed,
			reason:  "JobFailed",
			message: "Job Failed. failed: 7/1",
		},
		{
			name: "complete",
			obj: job(oneOfOne, `{`+started+`,"succeeded":1,"completionTime":"2026-01-01T00:01:00Z","conditions":[
				{"type":"Complete","status":"True"}]}`),
			state:   Ready,
			reason:  "Current",
			message: "Job Completed. succeeded: 1/1",
		},
		{
			// Kubernetes 1.31+: SuccessCriteriaMet first, then Complete once
			// the Job's pods have terminated.
			name: "complete, with SuccessCriteriaMet",
			obj: job(oneOfOne, `{`+started+`,"succeeded":1,"conditions":[
				{"type":"SuccessCriteriaMet","status":"True","reason":"CompletionsReached"},
				{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`),
			state:   Ready,
			reason:  "Current",
			message: "Job Completed. succeeded: 1/1",
		},
		{
			// kstatus: Current, "Job in progress".
			name: "SuccessCriteriaMet, not yet Complete",
			obj: job(`{"completions":3,"parallelism":3,"completionMode":"Indexed","successPolicy":{"rules":[{"succeededCount":1}]}}`,
				`{`+started+`,"active":2,"succeeded":1,"conditions":[
				{"type":"SuccessCriteriaMet","status":"True","reason":"SuccessPolicy"}]}`),
			state:   InProgress,
			reason:  "JobSucceeding",
			message: "Job met its success criteria, waiting for Complete (its remaining pods are terminating)",
		},
		{
			// Jobs have no status.observedGeneration: a change to a complete
			// Job (a label) does not make it run again, and Complete is final.
			name: "complete, generation changed since",
			obj: object(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate","generation":3},
				"spec":{"completions":1},
				"status":{`+started+`,"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}}`),
			state:   Ready,
			reason:  "Current",
			message: "Job Completed. succeeded: 1/1",
		},
		{
			name: "failed",
			obj: job(oneOfOne, `{`+started+`,"failed":7,"conditions":[
				{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}`),
			state:   Failed,
			reason:  "JobFailed",
			message: "Job Failed. failed: 7/1",
		},
		{
			name: "failed, with FailureTarget",
			obj: job(oneOfOne, `{`+started+`,"failed":7,"conditions":[
				{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"},
				{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}`),
			state:   Failed,
			reason:  "JobFailed",
			message: "Job Failed. failed: 7/1",
		},
		{
			name: "failed while suspended",
			obj: job(`{"completions":1,"parallelism":1,"suspend":true}`, `{`+started+`,"failed":1,"conditions":[
				{"type":"Failed","status":"True","reason":"DeadlineExceeded"}]}`),
			state:   Failed,
			reason:  "JobFailed",
			message: "Job Failed. failed: 1/1",
		},
		{
			// kstatus: Current, "Job in progress".
			name: "FailureTarget, not yet Failed",
			obj: job(oneOfOne, `{`+started+`,"active":1,"failed":1,"conditions":[
				{"type":"FailureTarget","status":"True","reason":"DeadlineExceeded"}]}`),
			state:   InProgress,
			reason:  "JobFailing",
			message: "Job failing (DeadlineExceeded), waiting for Failed (its remaining pods are terminating)",
		},
		{
			name:    "being deleted",
			obj:     object(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{`+started+`,"active":1}}`),
			state:   InProgress,
			reason:  "Terminating",
			message: "Resource scheduled for deletion",
		},
		{
			// The rule is batch's Job only.
			name:    "a custom resource of kind Job",
			obj:     object(t, `{"apiVersion":"example.com/v1","kind":"Job","metadata":{"name":"j"},"status":{`+started+`,"active":1}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is current",
		},
	}
	runComputeCases(t, tests)
}

// TestComputeMalformed feeds shapes that no API server would return for these
// kinds, or that a buggy controller could write: Compute must answer, never
// panic.
func TestComputeMalformed(t *testing.T) {
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		state   State
		message string // exact; "" means only "not empty" is checked
	}{
		{"nil object", nil, Failed, "no object"},
		{"nil content", &unstructured.Unstructured{}, Failed, "no object"},
		{"empty content", raw(map[string]interface{}{}), Ready, "Resource is current"},
		{"status is null", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget", "status": nil}), Ready, "Resource is current"},
		{"conditions is null", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"status": map[string]interface{}{"conditions": nil}}), Ready, "Resource is current"},
		{"custom resource, status is a string", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget", "status": "ok"}), Failed, "status is a string, not an object"},
		{"custom resource with generation, status is a string", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"generation": int64(1)}, "status": "ok"}), Failed, "status is a string, not an object"},
		{"status is a list", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget", "status": []interface{}{"a"}}), Failed, "status is a list, not an object"},
		{"conditions is a string", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"status": map[string]interface{}{"conditions": "Ready"}}), Failed, "status.conditions is a string, not a list"},
		{"conditions is a map", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"status": map[string]interface{}{"conditions": map[string]interface{}{"type": "Ready"}}}), Failed,
			"status.conditions is an object, not a list"},
		{"conditions holds strings", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"status": map[string]interface{}{"conditions": []interface{}{"Ready", nil, int64(3)}}}), Failed,
			"status.conditions[0] is a string, not an object"},
		{"condition status is a bool", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"status": map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"type": "Ready", "status": true}}}}), Failed,
			"status.conditions[0].status is a boolean, not a string"},
		{"condition type is a number", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"status": map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"type": int64(1), "status": "False"}}}}), Failed,
			"status.conditions[0].type is a number, not a string"},
		{"observedGeneration is a string", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"generation": int64(1)},
			"status":   map[string]interface{}{"observedGeneration": "1"}}), Failed, ""},
		{"generation is a string", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"generation": "1"}}), Failed, ""},
		{"metadata is a string", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget", "metadata": "w"}), Failed, ""},
		{"deletionTimestamp is a number", raw(map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"deletionTimestamp": int64(1)}}), Failed, ""},
		{"Deployment, replicas are strings", raw(map[string]interface{}{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"spec":   map[string]interface{}{"replicas": "2"},
			"status": map[string]interface{}{"replicas": "2", "conditions": []interface{}{}}}), InProgress, ""},
		{"Deployment, status is a number", raw(map[string]interface{}{
			"apiVersion": "apps/v1", "kind": "Deployment", "status": int64(3)}), Failed,
			"status is a number, not an object"},
		// kstatus asserts the types of a Pod's containerStatuses and panics.
		{"Pod, containerStatuses holds a string", raw(map[string]interface{}{
			"apiVersion": "v1", "kind": "Pod",
			"status": map[string]interface{}{"phase": "Running",
				"containerStatuses": []interface{}{"app"}}}), Failed,
			"cannot compute status: interface conversion: interface {} is string, not map[string]interface {}"},
		{"Pod, container state is a string", raw(map[string]interface{}{
			"apiVersion": "v1", "kind": "Pod",
			"status": map[string]interface{}{"phase": "Running",
				"containerStatuses": []interface{}{map[string]interface{}{"name": "app", "state": "waiting"}}}}), Failed, ""},
		{"Job, spec.suspend is a string", raw(map[string]interface{}{
			"apiVersion": "batch/v1", "kind": "Job",
			"spec":   map[string]interface{}{"suspend": "true"},
			"status": map[string]interface{}{"startTime": "2026-01-01T00:00:00Z"}}), InProgress,
			"Job running: 0 active, 0 succeeded"},
		{"Job, counts are strings", raw(map[string]interface{}{
			"apiVersion": "batch/v1", "kind": "Job",
			"spec":   map[string]interface{}{"completions": "1"},
			"status": map[string]interface{}{"startTime": "2026-01-01T00:00:00Z", "active": "1", "succeeded": "0"}}), InProgress,
			"Job running: 0 active, 0 succeeded"},
		{"Job, startTime is a number", raw(map[string]interface{}{
			"apiVersion": "batch/v1", "kind": "Job",
			"status": map[string]interface{}{"startTime": int64(1)}}), InProgress, "Job not started"},
		{"Job, spec is a string", raw(map[string]interface{}{
			"apiVersion": "batch/v1", "kind": "Job", "spec": "run"}), InProgress, "Job not started"},
		{"Pod, unknown phase", raw(map[string]interface{}{
			"apiVersion": "v1", "kind": "Pod", "status": map[string]interface{}{"phase": "Exploded"}}), Failed,
			"cannot compute status: unknown phase Exploded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.obj, nil)
			if got.State != tt.state {
				t.Errorf("state = %s, want %s (%+v)", got.State, tt.state, got)
			}
			if tt.message != "" && got.Message != tt.message {
				t.Errorf("message = %q, want %q", got.Message, tt.message)
			}
			if got.Message == "" || got.Reason == "" {
				t.Errorf("empty reason or message in %+v", got)
			}
			// The same shapes must not panic under a rule either.
			got = Compute(tt.obj, &Rule{FieldPath: "status.conditions[0].status", FieldValue: "True"})
			if got.Message == "" || got.Reason == "" {
				t.Errorf("rule: empty reason or message in %+v", got)
			}
		})
	}
}

func TestComputeRule(t *testing.T) {
	widget := func(status string) *unstructured.Unstructured {
		return object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":2},"status":`+status+`}`)
	}
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		rule    Rule
		state   State
		reason  string
		message string
	}{
		{
			name:    "string equals",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{"status.phase", "Running"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.phase is "Running"`,
		},
		{
			name:    "string differs",
			obj:     widget(`{"phase":"Pending"}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  "FieldValueMismatch",
			message: `status.phase is "Pending", waiting for "Running"`,
		},
		{
			name:    "field missing",
			obj:     widget(`{"replicas":1}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  "FieldNotSet",
			message: "status.phase is not set",
		},
		{
			name:    "no status at all",
			obj:     object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  "FieldNotSet",
			message: "status.phase is not set",
		},
		{
			name:    "field is null",
			obj:     widget(`{"phase":null}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  "FieldNotSet",
			message: "status.phase is not set",
		},
		{
			name:    "empty string is a value",
			obj:     widget(`{"phase":""}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  "FieldValueMismatch",
			message: `status.phase is "", waiting for "Running"`,
		},
		{
			name:    "integer equals",
			obj:     widget(`{"readyReplicas":3}`),
			rule:    Rule{"status.readyReplicas", "3"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.readyReplicas is "3"`,
		},
		{
			name:    "integer differs",
			obj:     widget(`{"readyReplicas":2}`),
			rule:    Rule{"status.readyReplicas", "3"},
			state:   InProgress,
			reason:  "FieldValueMismatch",
			message: `status.readyReplicas is "2", waiting for "3"`,
		},
		{
			name:    "float",
			obj:     widget(`{"ratio":0.5}`),
			rule:    Rule{"status.ratio", "0.5"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.ratio is "0.5"`,
		},
		{
			name:    "bool equals",
			obj:     widget(`{"ready":true}`),
			rule:    Rule{"status.ready", "true"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.ready is "true"`,
		},
		{
			name:    "bool differs",
			obj:     widget(`{"ready":false}`),
			rule:    Rule{"status.ready", "true"},
			state:   InProgress,
			reason:  "FieldValueMismatch",
			message: `status.ready is "false", waiting for "true"`,
		},
		{
			name:    "map is compared as JSON",
			obj:     widget(`{"endpoint":{"port":80,"host":"a"}}`),
			rule:    Rule{"status.endpoint", `{"host":"a","port":80}`},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.endpoint is "{\"host\":\"a\",\"port\":80}"`,
		},
		{
			name: "filter on conditions",
			obj: widget(`{"conditions":[{"type":"Ready","status":"False"},
				{"type":"Synced","status":"True"}]}`),
			rule:    Rule{`status.conditions[?(@.type=="Synced")].status`, "True"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.conditions[?(@.type=="Synced")].status is "True"`,
		},
		{
			name:    "filter matching nothing",
			obj:     widget(`{"conditions":[{"type":"Ready","status":"False"}]}`),
			rule:    Rule{`status.conditions[?(@.type=="Synced")].status`, "True"},
			state:   InProgress,
			reason:  "FieldNotSet",
			message: `status.conditions[?(@.type=="Synced")].status is not set`,
		},
		{
			name:    "bracket path",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{"['status'].phase", "Running"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `['status'].phase is "Running"`,
		},
		{
			name: "rule overrides Ready and Stalled conditions",
			obj: widget(`{"phase":"Running","observedGeneration":2,"conditions":[
				{"type":"Ready","status":"False"},{"type":"Stalled","status":"True"}]}`),
			rule:    Rule{"status.phase", "Running"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.phase is "Running"`,
		},
		{
			name:    "rule waits for a status of the latest generation",
			obj:     widget(`{"phase":"Running","observedGeneration":1}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  ReasonLatestGenerationNotObserved,
			message: "status.observedGeneration 1 is behind generation 2",
		},
		{
			name:    "rule waits while status.observedGeneration is ahead of the generation",
			obj:     widget(`{"phase":"Running","observedGeneration":3}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  ReasonLatestGenerationNotObserved,
			message: "status.observedGeneration 3 is ahead of generation 2",
		},
		{
			name:    "rule without status.observedGeneration: the rule alone",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{"status.phase", "Running"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `status.phase is "Running"`,
		},
		{
			name: "object being deleted",
			obj: object(t, `{"apiVersion":"example.com/v1","kind":"Widget",
				"metadata":{"name":"w","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":"Running"}}`),
			rule:    Rule{"status.phase", "Running"},
			state:   InProgress,
			reason:  "Terminating",
			message: "Resource scheduled for deletion",
		},
		{
			name:    "several values",
			obj:     widget(`{"items":[{"ok":"yes"},{"ok":"yes"}]}`),
			rule:    Rule{"status.items[*].ok", "yes"},
			state:   Failed,
			reason:  "InvalidRule",
			message: "status.items[*].ok yields 2 values, the readiness rule needs exactly one",
		},
		{
			name:    "evaluation error",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{"status.phase[0]", "R"},
			state:   Failed,
			reason:  "InvalidRule",
			message: "evaluating status.phase[0]: string is not array or slice",
		},
		{
			name:    "path that does not parse",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{"status.phase[", "Running"},
			state:   Failed,
			reason:  "InvalidRule",
			message: "",
		},
		{
			name:    "path with a leading dot",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{".status.phase", "Running"},
			state:   Ready,
			reason:  "FieldValueMatches",
			message: `.status.phase is "Running"`,
		},
		{
			name:    "path in braces",
			obj:     widget(`{"phase":"Pending"}`),
			rule:    Rule{"{.status.phase}", "Running"},
			state:   InProgress,
			reason:  "FieldValueMismatch",
			message: `{.status.phase} is "Pending", waiting for "Running"`,
		},
		{
			name:    "path with a recursive descent",
			obj:     widget(`{"phase":"Running"}`),
			rule:    Rule{"..phase", "Running"},
			state:   Failed,
			reason:  "InvalidRule",
			message: `readiness rule path "..phase": "..phase" starts with a recursive descent (..), which finds the field anywhere in the object: write the path from the object's root, such as status.phase`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := tt.rule
			got := Compute(tt.obj, &rule)
			if got.State != tt.state || got.Reason != tt.reason {
				t.Errorf("got %+v, want state %s, reason %s", got, tt.state, tt.reason)
			}
			if tt.message != "" && got.Message != tt.message {
				t.Errorf("message = %q, want %q", got.Message, tt.message)
			}
			if got.Message == "" {
				t.Errorf("empty message in %+v", got)
			}
		})
	}
}

func TestRuleFromAnnotations(t *testing.T) {
	const (
		pathKey  = "limbo.dev/readyWhenFieldPath"
		valueKey = "limbo.dev/readyWhenFieldValue"
	)
	tests := []struct {
		name        string
		annotations map[string]string
		want        *Rule
		err         string // exact; "*" prefix means "has this prefix"
	}{
		{name: "nil map"},
		{name: "no rule", annotations: map[string]string{"other": "x"}},
		{
			name:        "both",
			annotations: map[string]string{pathKey: "status.phase", valueKey: "Running"},
			want:        &Rule{FieldPath: "status.phase", FieldValue: "Running"},
		},
		{
			name:        "empty value is a value",
			annotations: map[string]string{pathKey: "status.message", valueKey: ""},
			want:        &Rule{FieldPath: "status.message", FieldValue: ""},
		},
		{
			name:        "filter path",
			annotations: map[string]string{pathKey: `status.conditions[?(@.type=="Synced")].status`, valueKey: "True"},
			want:        &Rule{FieldPath: `status.conditions[?(@.type=="Synced")].status`, FieldValue: "True"},
		},
		{
			name:        "only the path",
			annotations: map[string]string{pathKey: "status.phase"},
			err:         "annotation limbo.dev/readyWhenFieldPath is set but limbo.dev/readyWhenFieldValue is not: set both or neither",
		},
		{
			name:        "only the value",
			annotations: map[string]string{valueKey: "Running"},
			err:         "annotation limbo.dev/readyWhenFieldValue is set but limbo.dev/readyWhenFieldPath is not: set both or neither",
		},
		{
			name:        "empty path",
			annotations: map[string]string{pathKey: "", valueKey: "Running"},
			err:         "annotation limbo.dev/readyWhenFieldPath: the path is empty",
		},
		{
			name:        "path that does not parse",
			annotations: map[string]string{pathKey: "status.phase[", valueKey: "Running"},
			err:         "*annotation limbo.dev/readyWhenFieldPath: invalid JSONPath: ",
		},
		{
			name:        "path with a leading dot",
			annotations: map[string]string{pathKey: ".status.phase", valueKey: "Running"},
			want:        &Rule{FieldPath: "status.phase", FieldValue: "Running"},
		},
		{
			name:        "path in braces, as kubectl's -o jsonpath",
			annotations: map[string]string{pathKey: "{.status.phase}", valueKey: "Running"},
			want:        &Rule{FieldPath: "status.phase", FieldValue: "Running"},
		},
		{
			name:        "filter path in braces",
			annotations: map[string]string{pathKey: `{.status.conditions[?(@.type=="Synced")].status}`, valueKey: "True"},
			want:        &Rule{FieldPath: `status.conditions[?(@.type=="Synced")].status`, FieldValue: "True"},
		},
		{
			name:        "path with a recursive descent",
			annotations: map[string]string{pathKey: "$..phase", valueKey: "Running"},
			err:         "*annotation limbo.dev/readyWhenFieldPath: \"$..phase\" starts with a recursive descent",
		},
		{
			name:        "path with a stray closing brace",
			annotations: map[string]string{pathKey: "status.phase}{.a", valueKey: "Running"},
			err:         "annotation limbo.dev/readyWhenFieldPath: invalid JSONPath: braces are not allowed",
		},
		{
			name:        "path with a leading $",
			annotations: map[string]string{pathKey: "$.status.phase", valueKey: "Running"},
			want:        &Rule{FieldPath: "status.phase", FieldValue: "Running"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RuleFromAnnotations(tt.annotations)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.err != "" && err == nil:
				t.Fatalf("no error, want %q (got %+v)", tt.err, got)
			case strings.HasPrefix(tt.err, "*"):
				if !strings.HasPrefix(err.Error(), tt.err[1:]) {
					t.Fatalf("error %q, want prefix %q", err, tt.err[1:])
				}
			case tt.err != "":
				if err.Error() != tt.err {
					t.Fatalf("error %q, want %q", err, tt.err)
				}
			}
			if err != nil {
				if got != nil {
					t.Errorf("rule %+v returned with an error", got)
				}
				return
			}
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("got %+v, want nil", got)
			case tt.want != nil && (got == nil || *got != *tt.want):
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPendingClaimClass(t *testing.T) {
	const claim = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"%s},"spec":{%s},"status":{%s}}`
	tests := []struct {
		name      string
		obj       string
		wantClass string
		wantOK    bool
	}{
		{name: "pending, no Pod scheduled", obj: fmt.Sprintf(claim, ``, `"storageClassName":"lazy"`, `"phase":"Pending"`), wantClass: "lazy", wantOK: true},
		{name: "pending, a Pod scheduled: being provisioned", obj: fmt.Sprintf(claim, `,"annotations":{"volume.kubernetes.io/selected-node":"n1"}`, `"storageClassName":"lazy"`, `"phase":"Pending"`)},
		{name: "bound", obj: fmt.Sprintf(claim, ``, `"storageClassName":"lazy"`, `"phase":"Bound"`)},
		{name: "no status yet", obj: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"storageClassName":"lazy"}}`},
		{name: "no class: binds to a matching volume", obj: fmt.Sprintf(claim, ``, ``, `"phase":"Pending"`)},
		{name: "empty class: static binding", obj: fmt.Sprintf(claim, ``, `"storageClassName":""`, `"phase":"Pending"`)},
		{name: "being deleted", obj: fmt.Sprintf(claim, `,"deletionTimestamp":"2026-11-22T10:00:00Z"`, `"storageClassName":"lazy"`, `"phase":"Pending"`)},
		{name: "another kind", obj: `{"apiVersion":"example.com/v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"storageClassName":"lazy"},"status":{"phase":"Pending"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, ok := PendingClaimClass(object(t, tt.obj))
			if class != tt.wantClass || ok != tt.wantOK {
				t.Errorf("PendingClaimClass() = %q, %v; want %q, %v", class, ok, tt.wantClass, tt.wantOK)
			}
		})
	}
}

// A bare Pod that failed is Failed, as a failed Job is: kstatus calls it Current
// ("Pod has completed, but not successfully"), which let a migration run as a
// Pod that failed open its dependents and the orphan gate. A paused Deployment
// stays InProgress, as kstatus says, but with a reason that says why — kstatus's
// ("ReplicaSet not Available", "LessReplicas") sent the user looking for a fault.
func TestComputeWorkloadRules(t *testing.T) {
	tests := []computeCase{
		{
			name: "a Pod that failed",
			obj: object(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"migrate"},
				"status":{"phase":"Failed","reason":"DeadlineExceeded","message":"Pod was active on the node longer than the specified deadline"}}`),
			state:   Failed,
			reason:  "PodFailed",
			message: "Pod failed: DeadlineExceeded: Pod was active on the node longer than the specified deadline",
		},
		{
			name:    "a Pod that failed without a reason",
			obj:     object(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"migrate"},"status":{"phase":"Failed"}}`),
			state:   Failed,
			reason:  "PodFailed",
			message: "Pod failed",
		},
		{
			name: "a Pod that succeeded keeps kstatus's verdict",
			obj: object(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"migrate"},
				"status":{"phase":"Succeeded"}}`),
			state:   Ready,
			reason:  "Current",
			message: "Pod has completed successfully",
		},
		{
			name: "a Deployment paused after its rollout keeps kstatus's verdict",
			obj: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","generation":3},
				"spec":{"replicas":1,"paused":true},
				"status":{"observedGeneration":3,"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,"conditions":[
					{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"},
					{"type":"Progressing","status":"Unknown","reason":"DeploymentPaused","message":"Deployment is paused"}]}}`),
			state:   Ready,
			reason:  "Current",
			message: "Deployment is available. Replicas: 1",
		},
		{
			name: "a Deployment paused with a template not rolled out",
			obj: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","generation":4},
				"spec":{"replicas":2,"paused":true},
				"status":{"observedGeneration":4,"replicas":2,"updatedReplicas":0,"readyReplicas":2,"availableReplicas":2,"conditions":[
					{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"},
					{"type":"Progressing","status":"Unknown","reason":"DeploymentPaused","message":"Deployment is paused"}]}}`),
			state:   InProgress,
			reason:  "DeploymentPaused",
			message: "Deployment is paused (spec.paused): its rollout waits for kubectl rollout resume",
		},
		{
			name: "a Deployment paused from its creation",
			obj: object(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","generation":1},
				"spec":{"replicas":2,"paused":true},"status":{"observedGeneration":1}}`),
			state:   InProgress,
			reason:  "DeploymentPaused",
			message: "Deployment is paused (spec.paused): its rollout waits for kubectl rollout resume",
		},
		{
			name:    "a custom resource of kind Pod that failed",
			obj:     object(t, `{"apiVersion":"example.com/v1","kind":"Pod","metadata":{"name":"p"},"status":{"phase":"Failed"}}`),
			state:   Ready,
			reason:  "Current",
			message: "Resource is current",
		},
	}
	runComputeCases(t, tests)
}

// A StatefulSet is Ready once its rollout is done, by kstatus's rules without
// per-kind code here (DESIGN §3 step 5): one mid-rollout counted Ready would open
// the orphan gate while its pods are replaced.
func TestComputeStatefulSet(t *testing.T) {
	sts := func(spec, status string) *unstructured.Unstructured {
		return object(t, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"ns","generation":2},
			"spec":`+spec+`,"status":`+status+`}`)
	}
	const spec = `{"replicas":3,"updateStrategy":{"type":"RollingUpdate"}}`
	tests := []struct {
		name  string
		obj   *unstructured.Unstructured
		state State
	}{
		{"rolled out", sts(spec, `{"observedGeneration":2,"replicas":3,"readyReplicas":3,"availableReplicas":3,"currentReplicas":3,"updatedReplicas":3,"currentRevision":"db-2","updateRevision":"db-2"}`), Ready},
		{"pods being replaced", sts(spec, `{"observedGeneration":2,"replicas":3,"readyReplicas":3,"availableReplicas":3,"currentReplicas":2,"updatedReplicas":1,"currentRevision":"db-1","updateRevision":"db-2"}`), InProgress},
		{"not all ready", sts(spec, `{"observedGeneration":2,"replicas":3,"readyReplicas":2,"availableReplicas":2,"currentReplicas":3,"updatedReplicas":3,"currentRevision":"db-2","updateRevision":"db-2"}`), InProgress},
		{"its controller behind the spec", sts(spec, `{"observedGeneration":1,"replicas":3,"readyReplicas":3,"availableReplicas":3,"currentReplicas":3,"updatedReplicas":3,"currentRevision":"db-1","updateRevision":"db-1"}`), InProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compute(tt.obj, nil); got.State != tt.state {
				t.Errorf("got %+v, want %s", got, tt.state)
			}
		})
	}
}

// computeCase is an object and the readiness Compute must find of it, without a
// rule.
type computeCase struct {
	name    string
	obj     *unstructured.Unstructured
	state   State
	reason  string
	message string
}

func runComputeCases(t *testing.T, tests []computeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.obj, nil)
			want := Result{State: tt.state, Reason: tt.reason, Message: tt.message}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}
