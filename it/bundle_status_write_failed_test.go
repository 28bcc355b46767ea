package it

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

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
	password := secret("password")
	password["metadata"].(map[string]any)["annotations"] = map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}
	b, config, refusal := objectBehindFailedStatusWrites(t, secretGVK, password)
	ns := b.Namespace
	updateBundle(t, b, config)
	dropped := getBundle(t, b).Generation
	// A pass of the new spec ran, on the status of before the refusals.
	generation := fmt.Sprintf(`"observedGeneration":%d`, dropped)
	refusal.waitRefused(t, "a status write of generation "+generation, func(writes []string) bool {
		return slices.ContainsFunc(writes, func(w string) bool { return strings.Contains(w, generation) })
	})
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

// objectBehindFailedStatusWrites creates Bundle shop of one ConfigMap
// (config, returned) and waits until it is Ready; then, with the controller's
// writes of its status refused (the refusal is returned), adds obj, of kind gvk,
// as a resource of its name and waits until the controller created it. No
// status names obj's kind then.
func objectBehindFailedStatusWrites(t *testing.T, gvk schema.GroupVersionKind, obj map[string]any) (*limbov1alpha1.Bundle, limbov1alpha1.Resource, *requestRefusal) {
	t.Helper()
	ns := env.Namespace(t)
	config := objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil))
	b := createBundle(t, ns, "shop", config)
	waitReady(t, b)

	refusal := refuseStatusWrites(t, ns, b.Name)
	name := obj["metadata"].(map[string]any)["name"].(string)
	updateBundle(t, b, config, objectResource(t, name, obj))
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if getObject(t, gvk, ns, name) == nil {
			return fmt.Errorf("%s %s not created yet", gvk.Kind, name)
		}
		return nil
	})
	refusal.waitRefused(t, "a status write", func(writes []string) bool { return len(writes) > 0 })
	return b, config, refusal
}

// refuseStatusWrites refuses the in-process controller's writes of the status
// of Bundle ns/name (see requestRefusal).
func refuseStatusWrites(t *testing.T, ns, name string) *requestRefusal {
	t.Helper()
	path := "/apis/" + limbov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/bundles/" + name + "/status"
	return refuseRequests(t, func(req *http.Request) bool { return req.Method != http.MethodGet && req.URL.Path == path })
}
