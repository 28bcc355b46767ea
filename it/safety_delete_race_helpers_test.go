package it

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// Helpers of the tests of a change that races the controller's delete of a due
// object (safety_race_*): the change is made to land at an exact point of the
// controller's work, not by timing luck, with an interceptor of the in-process
// controller's requests.

// racePoint is where the change lands.
type racePoint struct {
	name string
	// methods are the requests about the object that trigger the change: the
	// first one the controller sends once the object is due.
	methods []string
}

var (
	// beforeFreshRead: ahead of the controller's first request about the due
	// object, whatever it is. The copy the controller decided on (its cache, the
	// reaper's list) is stale from then on: the fresh read must see the change
	// and decide again, so no DELETE is even sent. A controller that deletes its
	// cached copy sends a DELETE first, and the change lands just before it.
	beforeFreshRead = racePoint{name: "before the fresh read", methods: []string{http.MethodGet, http.MethodDelete}}
	// beforeDelete: after the fresh read, ahead of the DELETE: only the
	// resourceVersion precondition can catch this one (Conflict), and the object
	// is read and decided again.
	beforeDelete = racePoint{name: "between the fresh read and the delete", methods: []string{http.MethodDelete}}

	racePoints = []racePoint{beforeFreshRead, beforeDelete}
)

func (p racePoint) triggeredBy(method string) bool {
	for _, m := range p.methods {
		if m == method {
			return true
		}
	}
	return false
}

// deleteRace is a change armed to land once at a race point of the
// controller's delete of one ConfigMap.
type deleteRace struct {
	path  string
	fired chan struct{}
	// state: 0 armed, 1 firing or fired.
	state atomic.Int32
	err   error
}

// raceConfigMapDelete arms change to run once, at point, ahead of the first
// request of the in-process controller about ConfigMap ns/name that comes when
// ready accepts the live object (read from the API server at that moment; nil
// ready: the object is due, as the state machine reads it). The request goes on
// once change returned. change runs on the controller's goroutine: it must not
// call t methods; it returns an error instead.
func raceConfigMapDelete(t *testing.T, ns, name string, point racePoint, ready func(live *unstructured.Unstructured) error, change func(ctx context.Context) error) *deleteRace {
	t.Helper()
	r := &deleteRace{path: "/api/v1/namespaces/" + ns + "/configmaps/" + name, fired: make(chan struct{})}
	if ready == nil {
		ready = isDue
	}
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if req.URL.Path != r.path || !point.triggeredBy(req.Method) || r.state.Load() != 0 {
			return send(req)
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(configMapGVK)
		if err := env.Client.Get(req.Context(), client.ObjectKey{Namespace: ns, Name: name}, live); err != nil || ready(live) != nil {
			return send(req) // not yet the request the race is about
		}
		if !r.state.CompareAndSwap(0, 1) {
			return send(req)
		}
		// Requests that the change itself causes (an adoption's read) pass.
		ctx, cancel := context.WithTimeout(context.Background(), testenv.DefaultTimeout)
		defer cancel()
		r.err = change(ctx)
		close(r.fired)
		return send(req)
	})
	return r
}

// isDue accepts an object whose countdown has ended.
func isDue(live *unstructured.Unstructured) error {
	_, labelled := live.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	if d := softdelete.Decide(time.Now(), softdelete.State{Annotations: live.GetAnnotations(), PendingLabel: labelled}); d.Action != softdelete.ActionDelete {
		return fmt.Errorf("not due: %s", d.Action)
	}
	return nil
}

// wait waits until the change landed, and fails t if it failed.
func (r *deleteRace) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.fired:
	case <-time.After(2 * testenv.DefaultTimeout):
		t.Fatalf("the controller sent no request about %s once it was due", r.path)
	}
	if r.err != nil {
		t.Fatalf("the racing change failed: %v", r.err)
	}
}

// deletesSent lists the DELETE requests the controller sent for the object.
func (r *deleteRace) deletesSent() []testenv.Request {
	return env.ControllerRequests(func(req testenv.Request) bool {
		return req.Method == http.MethodDelete && req.Path == r.path
	})
}

// checkDecidedOnFreshRead fails t if, at point beforeFreshRead, the controller
// sent a DELETE at all: the fresh read, not the precondition, must have
// stopped it.
func (r *deleteRace) checkDecidedOnFreshRead(t *testing.T, point racePoint) {
	t.Helper()
	if point.name != beforeFreshRead.name {
		return
	}
	if sent := r.deletesSent(); len(sent) != 0 {
		t.Errorf("the controller sent a DELETE after the change landed before its fresh read: %s", testenv.FormatRequests(sent))
	}
}

// mergePatchConfigMap sends a JSON merge patch to ConfigMap ns/name.
func mergePatchConfigMap(ctx context.Context, ns, name, patch string) error {
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(configMapGVK)
	cm.SetNamespace(ns)
	cm.SetName(name)
	return env.Client.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// pollUntil polls cond until it returns nil or ctx ends (then it returns cond's
// last error): Eventually for code that runs off the test's goroutine.
func pollUntil(ctx context.Context, cond func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-tick.C:
		}
	}
}
