package it

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphan whose delete a pass has decided, but whose Bundle is deleted
// between the pass's read of the Bundle and its re-read just before the DELETE,
// is not deleted by that pass (the Bundle changed) — and it stays the Bundle's:
// its pendingDeletions entry, and with it the kind the teardown lists, is kept.
// The teardown then finds it and deletes it, through limbo's audit trail. Before,
// the pass dropped the entry; a Bundle whose spec declared no other object of
// that kind lost the kind from status.managedKinds, its teardown listed nothing
// and let the Bundle go, and the garbage collector deleted the orphan behind
// limbo's back (found by the soak: an overdue object, 2 s late after an API
// server restart).
func TestOrphanInterruptedByItsBundlesDeletionStaysTheBundles(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := waitReady(t, createBundle(t, ns, "interrupted", objectResource(t, "x", configMap("x", map[string]any{"a": "b"}, nil))))

	bundlePath := "/apis/limbo.dev/v1alpha1/namespaces/" + ns + "/bundles/interrupted"
	objectPath := "/api/v1/namespaces/" + ns + "/configmaps/x"
	var (
		mu            sync.Mutex
		held          bool
		reread        = make(chan struct{})
		release       = make(chan struct{})
		releaseOnce   = sync.OnceFunc(func() { close(release) })
		limboDeletedX bool
	)
	// A test that fails before the release lets the held read go: it holds
	// one of the controller's workers, which the parallel tests share.
	t.Cleanup(releaseOnce)
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		switch {
		case req.Method == http.MethodGet && req.URL.Path == bundlePath:
			mu.Lock()
			first := !held
			held = true
			mu.Unlock()
			if first { // the pass's re-read of the Bundle before it deletes x
				close(reread)
				select {
				case <-release:
				case <-time.After(testenv.DefaultTimeout):
				}
			}
		case req.Method == http.MethodDelete && req.URL.Path == objectPath:
			resp, err := send(req)
			if err == nil && resp.StatusCode == http.StatusOK {
				mu.Lock()
				limboDeletedX = true
				mu.Unlock()
			}
			return resp, err
		}
		return send(req)
	})

	// x leaves the spec (no delay: due at once), and no other ConfigMap is
	// declared.
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		cur.Spec.Resources, cur.Spec.AllowEmpty = nil, true
		return env.Client.Update(context.Background(), &cur)
	})
	select {
	case <-reread:
	case <-time.After(testenv.DefaultTimeout):
		t.Fatal("the controller never read the Bundle again before deleting x")
	}
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	releaseOnce()

	waitGone(t, configMapGVK, ns, "x")
	waitBundleGone(t, b)
	mu.Lock()
	defer mu.Unlock()
	if !limboDeletedX {
		t.Error("x was deleted, but not by limbo: its Bundle's teardown let the Bundle go without it, and the garbage collector deleted it")
	}
}
