package it

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// A resource's message is bounded however long the text it comes from: a
// readiness message copied from an object's condition is whatever its operator
// wrote. Two Widgets whose operators wrote a megabyte each made the Bundle's
// status larger than etcd takes: every status write failed, and the Bundle
// showed its last state for good.
func TestLongResourceMessagesAreBounded(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	b := createBundle(t, ns, "chatty", objectResource(t, "w1", widget("w1")), objectResource(t, "w2", widget("w2")))
	long := strings.Repeat("the operator has much to say. ", 1<<20/30)
	for _, name := range []string{"w1", "w2"} {
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			u := getObject(t, widgetGVK, ns, name)
			if u == nil {
				return fmt.Errorf("widget %s does not exist yet", name)
			}
			u.Object["status"] = map[string]any{
				"observedGeneration": u.GetGeneration(),
				"conditions":         []any{map[string]any{"type": "Ready", "status": "False", "reason": "Busy", "message": long}},
			}
			return env.Client.Status().Update(context.Background(), u)
		})
	}
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		for _, name := range []string{"w1", "w2"} {
			st := resourceStatus(cur, name)
			switch {
			case st == nil || !strings.Contains(st.Message, "the operator has much to say."):
				return fmt.Errorf("resource %s: %+v, want the operator's message", name, st)
			case len(st.Message) > bundlespec.MessageBudget:
				return fmt.Errorf("resource %s: a message of %d bytes, want at most %d", name, len(st.Message), bundlespec.MessageBudget)
			}
		}
		return nil
	})
}
