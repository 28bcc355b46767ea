package it

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// An orphan with an invalid limbo.dev/deletionDelay is never stamped nor
// labelled: only its Bundle's status reports it. pending -o wide still shows its
// DELAY as the object carries it (read from the object through the real API
// server's metadata API), as it does for a labelled object, not <unknown>; -o
// json has it as deletionDelay.
func TestKubectlLimboPendingDelayOfAnOrphanOnlyItsBundleReports(t *testing.T) {
	t.Parallel()
	k := newKubectlLimbo(t)
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	b := createBundle(t, ns, "shop", keep, objectResource(t, "legacy", configMap("legacy", map[string]any{"a": "b"}, nil)))
	b = waitReady(t, b)
	// The spec refuses an invalid delay: someone else sets it on the live object,
	// in a field the Bundle does not manage.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"forever"}}}`, limbov1alpha1.AnnotationDeletionDelay)
	if err := env.Client.Patch(context.Background(), getObject(t, configMapGVK, ns, "legacy"), client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	updateBundle(t, b, keep)
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, e := range cur.Status.PendingDeletions {
			if e.Name == "legacy" && e.InvalidDelay() {
				return nil
			}
		}
		return fmt.Errorf("pendingDeletions does not report legacy's invalid delay: %+v", cur.Status.PendingDeletions)
	})

	wide := k.must(t, "pending", "-n", ns, "-o", "wide")
	if !regexp.MustCompile(`(?m)^ConfigMap +legacy +shop +<none> +never +forever +<unknown> +invalid limbo.dev/deletionDelay "forever"`).MatchString(wide) {
		t.Errorf("pending -o wide prints:\n%s\nwant legacy's row with DELAY forever", wide)
	}
	var list struct {
		Items []struct {
			Name          string `json:"name"`
			DeletionDelay string `json:"deletionDelay"`
		} `json:"items"`
	}
	out := k.must(t, "pending", "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("pending -o json: %v\n%s", err, out)
	}
	found := false
	for _, item := range list.Items {
		if item.Name == "legacy" {
			found = true
			if item.DeletionDelay != "forever" {
				t.Errorf("pending -o json: legacy's deletionDelay %q, want forever", item.DeletionDelay)
			}
		}
	}
	if !found {
		t.Errorf("pending -o json does not list legacy:\n%s", out)
	}
	if table := k.must(t, "pending", "-n", ns); strings.Contains(table, "DELAY") {
		t.Errorf("pending without -o wide prints DELAY:\n%s", table)
	}
}
