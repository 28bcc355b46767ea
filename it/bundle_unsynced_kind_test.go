package it

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Passes also list the kinds the controller watches for other Bundles (an
// object behind a failed status write may have one of them), from the cache. A
// cache list of a kind whose informer has not synced waits for it, so a kind the
// controller cannot list — here the API server refuses its list of LimitRanges —
// must not hold the passes of Bundles that do not use it: only synced kinds are
// added. The Bundle that uses it reports the kind's cache as not synced (after
// a bounded wait) instead of waiting in silence, and gets Ready once the
// controller can list the kind. Not parallel: while the refusal lasts, a pass that waited on the kind
// would hold a worker of the shared controller.
func TestUnsyncedKindHoldsOnlyItsBundles(t *testing.T) {
	refusal := refuseRequests(t, func(req *http.Request) bool {
		return req.Method == http.MethodGet && req.URL.Path == "/api/v1/limitranges"
	})
	t.Cleanup(refusal.lift)
	limits := env.Namespace(t)
	createBundle(t, limits, "limits", objectResource(t, "range", map[string]any{
		"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "range"},
		"spec": map[string]any{"limits": []any{map[string]any{"type": "Container", "default": map[string]any{"cpu": "100m"}}}},
	}))
	refusal.waitRefused(t, "the controller's list of LimitRanges", func(lists []string) bool { return len(lists) > 0 })

	ns := env.Namespace(t)
	waitReady(t, createBundle(t, ns, "shop", objectResource(t, "config", configMap("config", map[string]any{"k": "v"}, nil))))

	// The Bundle of the kind says what is wrong, rather than waiting in silence,
	// and gets Ready once the controller can list the kind.
	b := waitBundle(t, &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: limits, Name: "limits"}}, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceIs(cur, "range", limbov1alpha1.ResourceError, limbov1alpha1.ReasonReadFailed); err != nil {
			return err
		}
		if msg := cur.Status.Resources[0].Message; !strings.Contains(msg, "has not synced") {
			return fmt.Errorf("resource range: message %q does not say the cache has not synced", msg)
		}
		return nil
	})
	refusal.lift()
	waitReady(t, b)
}
