package it

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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

// forEachRacePoint runs test at every race point, in parallel, each in a
// namespace of its own.
func forEachRacePoint(t *testing.T, test func(t *testing.T, ns string, point racePoint)) {
	t.Helper()
	for _, point := range racePoints {
		t.Run(point.name, func(t *testing.T) {
			t.Parallel()
			test(t, env.Namespace(t), point)
		})
	}
}

// raceDelay is the deletionDelay of the object the races are about.
const raceDelay = "3s"

// countdownBundle creates Bundle "shop" with ConfigMaps keep and db (db with
// raceDelay) and waits until it is Ready. It returns the Bundle, the resource
// keep (the spec without db: db's countdown starts) and db's UID.
func countdownBundle(t *testing.T, ns string) (*limbov1alpha1.Bundle, limbov1alpha1.Resource, string) {
	t.Helper()
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	db := objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: raceDelay}))
	b := createBundle(t, ns, "shop", keep, db)
	b = waitReady(t, b)
	return b, keep, string(getObject(t, configMapGVK, ns, "db").GetUID())
}

// requestRace is a change armed to land once, ahead of one request of the
// controller.
type requestRace struct {
	path  string
	fired chan struct{}
	// state: 0 armed, 1 firing or fired.
	state atomic.Int32
	err   error
}

// raceRequest arms change to run once, ahead of the first request of the
// in-process controller to path with one of methods that comes when ready
// accepts (ready reads what it needs from the API server at that moment). The
// request goes on once change returned; the controller's other requests,
// those that change itself causes included (an adoption's read), pass. ready
// and change run on the controller's goroutine: they must not call t methods;
// they return errors instead.
func raceRequest(t *testing.T, path string, methods []string, ready, change func(ctx context.Context) error) *requestRace {
	t.Helper()
	r := &requestRace{path: path, fired: make(chan struct{})}
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if req.URL.Path != path || !slices.Contains(methods, req.Method) || r.state.Load() != 0 {
			return send(req)
		}
		if ready(req.Context()) != nil || !r.state.CompareAndSwap(0, 1) {
			return send(req) // not the request the race is about
		}
		ctx, cancel := context.WithTimeout(context.Background(), testenv.DefaultTimeout)
		defer cancel()
		r.err = change(ctx)
		close(r.fired)
		return send(req)
	})
	return r
}

// raceConfigMapDelete arms change to land at point of the controller's delete
// of ConfigMap ns/name: ahead of the first request there that comes when ready
// accepts the live object (nil ready: when the object is due, as the state
// machine reads it).
func raceConfigMapDelete(t *testing.T, ns, name string, point racePoint, ready func(live *unstructured.Unstructured) error, change func(ctx context.Context) error) *requestRace {
	t.Helper()
	if ready == nil {
		ready = isDue
	}
	return raceRequest(t, "/api/v1/namespaces/"+ns+"/configmaps/"+name, point.methods, func(ctx context.Context) error {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(configMapGVK)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live); err != nil {
			return err
		}
		return ready(live)
	}, change)
}

// isDue accepts an object whose countdown has ended.
func isDue(live *unstructured.Unstructured) error {
	_, labelled := live.GetLabels()[limbov1alpha1.LabelPendingDeletion]
	if d := softdelete.Decide(time.Now(), softdelete.State{Annotations: live.GetAnnotations(), PendingLabel: labelled}); d.Action != softdelete.ActionDelete {
		return fmt.Errorf("not due: %s", d.Action)
	}
	return nil
}

// wait waits until the change landed or stop (if not nil) reports something
// that the caller checks next, and fails t if the change failed. It reports
// whether the change landed.
func (r *requestRace) wait(t *testing.T, stop func() bool) bool {
	t.Helper()
	landed := false
	testenv.Eventually(t, 2*testenv.DefaultTimeout, func() error {
		select {
		case <-r.fired:
			landed = true
			return nil
		default:
		}
		if stop != nil && stop() {
			return nil
		}
		return fmt.Errorf("the controller sent no request to %s when the race was to land", r.path)
	})
	if landed && r.err != nil {
		t.Fatalf("the racing change failed: %v", r.err)
	}
	return landed
}

// deletesSent lists the DELETE requests the controller sent for the object.
func (r *requestRace) deletesSent() []testenv.Request {
	return env.ControllerRequests(func(req testenv.Request) bool {
		return req.Method == http.MethodDelete && req.Path == r.path
	})
}

// checkDecidedOnFreshRead fails t if, at point beforeFreshRead, the controller
// sent a DELETE at all: the fresh read, not the precondition, must have
// stopped it.
func (r *requestRace) checkDecidedOnFreshRead(t *testing.T, point racePoint) {
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
