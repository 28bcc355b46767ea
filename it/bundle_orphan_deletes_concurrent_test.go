package it

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The orphans one pass deletes are deleted side by side, as the objects of a
// wave are applied (--apply-concurrency): a change that drops many objects at
// once, or many countdowns that end in the same second, costs about one round
// trip, not one per object. The controller's first DELETE of them is held until
// a second one arrives: deleted one by one, none does, and the hold runs out
// (then the rest go through, and the test fails on the count).
func TestOrphanDeletesOfOnePassRunSideBySide(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const dropped = 6
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := waitReady(t, createBundle(t, ns, "many", append([]limbov1alpha1.Resource{keep}, configMapResources(t, "old", dropped, nil)...)...))

	prefix := "/api/v1/namespaces/" + ns + "/configmaps/old-"
	var (
		mu             sync.Mutex
		inFlight, most int
		second         = make(chan struct{})
		secondArrived  bool
		held           bool
	)
	// A test that fails before the second DELETE lets the held one go: it
	// holds one of the controller's workers, which the parallel tests share.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if !secondArrived {
			secondArrived = true
			close(second)
		}
	})
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if req.Method != http.MethodDelete || !strings.HasPrefix(req.URL.Path, prefix) {
			return send(req)
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		first := !held
		held = true
		if inFlight == 2 && !secondArrived {
			secondArrived = true
			close(second)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		if first {
			select {
			case <-second:
			case <-time.After(testenv.DefaultTimeout):
			}
		}
		return send(req)
	})

	updateBundle(t, b, keep)
	for i := range dropped {
		waitGone(t, configMapGVK, ns, fmt.Sprintf("old-%02d", i))
	}
	mu.Lock()
	defer mu.Unlock()
	if most < 2 {
		t.Errorf("the controller deleted the %d orphans of one pass one at a time (at most %d DELETE in flight)", dropped, most)
	}
}
