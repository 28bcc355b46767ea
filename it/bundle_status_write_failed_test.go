package it

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A pass creates a Bundle's objects before it writes the Bundle's status, so an
// object can exist that only a failed status write named: here a Secret, the
// Bundle's only one, added to the spec while the API server refuses limbo's
// status writes, and dropped from the spec again before any write succeeds.
// Neither the spec nor the status limbo last wrote names Secrets then; limbo
// must still find the Secret it created and controls, and put it in limbo
// with its deletionDelay, not leave it behind unmanaged (or, once the Bundle is
// deleted, to the garbage collector, which ignores the delay).
func TestOrphanOfAKindOnlyAFailedStatusWriteNamed(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	config := objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "shop", config)
	waitReady(t, b)

	refusal := refuseStatusWrites(t, ns, b.Name)
	password := secret("password")
	password["metadata"].(map[string]any)["annotations"] = map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}
	updateBundle(t, b, config, objectResource(t, "password", password))
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if getObject(t, secretGVK, ns, "password") == nil {
			return fmt.Errorf("Secret password not created yet")
		}
		return nil
	})
	updateBundle(t, b, config)
	dropped := getBundle(t, b).Generation
	refusal.waitRefused(t, dropped)
	refusal.lift()

	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, pd := range cur.Status.PendingDeletions {
			if pd.Kind == "Secret" && pd.Name == "password" {
				return nil
			}
		}
		return fmt.Errorf("pendingDeletions %+v does not list Secret password", cur.Status.PendingDeletions)
	})
	if cur.Status.ObservedGeneration != dropped {
		t.Errorf("observedGeneration %d, want %d", cur.Status.ObservedGeneration, dropped)
	}
	s := getObject(t, secretGVK, ns, "password")
	if s == nil {
		t.Fatal("Secret password was deleted; its deletionDelay is 1h")
	}
	if _, stamped := s.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; !stamped {
		t.Errorf("Secret password is not stamped: annotations %v", s.GetAnnotations())
	}
}

// statusWriteRefusal makes the API server refuse the in-process controller's
// status writes of one Bundle until lift, and records the observedGeneration
// each refused write carried.
type statusWriteRefusal struct {
	mu      sync.Mutex
	lifted  bool
	refused []string // the bodies of the refused writes
}

// refuseStatusWrites sends the controller's status writes of Bundle ns/name as
// a user without permissions, so that the API server answers Forbidden.
func refuseStatusWrites(t *testing.T, ns, name string) *statusWriteRefusal {
	t.Helper()
	r := &statusWriteRefusal{}
	path := "/apis/" + limbov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/bundles/" + name + "/status"
	env.InterceptController(t, func(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if req.URL.Path != path || req.Method == http.MethodGet {
			return send(req)
		}
		r.mu.Lock()
		lifted := r.lifted
		r.mu.Unlock()
		if lifted {
			return send(req)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		noAccess := req.Clone(req.Context())
		noAccess.Body = io.NopCloser(bytes.NewReader(body))
		noAccess.Header.Set("Impersonate-User", "limbo-test-no-access")
		resp, err := send(noAccess)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.mu.Lock()
			r.refused = append(r.refused, string(body))
			r.mu.Unlock()
		}
		return resp, err
	})
	return r
}

// waitRefused waits until a status write for generation was refused: a pass
// of that generation has run, on the status of before the refusals.
func (r *statusWriteRefusal) waitRefused(t *testing.T, generation int64) {
	t.Helper()
	want := fmt.Sprintf(`"observedGeneration":%d`, generation)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, body := range r.refused {
			if strings.Contains(body, want) {
				return nil
			}
		}
		return fmt.Errorf("no status write of generation %d refused yet (%d refused)", generation, len(r.refused))
	})
}

func (r *statusWriteRefusal) lift() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lifted = true
}
