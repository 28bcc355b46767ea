package it

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// The Node coming back before the deadline cancels: every stamp goes, with
// everything else limbo wrote, and the resources are the same objects.
func TestNodeRemovalCancel(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	b := nodeRemovalBundle(t, ns, "1h", map[string]any{})
	inLimbo := n.remove(t, b)

	createNode(t, n.name, drainTaint)
	for i, o := range n.objects {
		u := waitObject(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName(), func(u *unstructured.Unstructured) error {
			if err := notInLimbo(u); err != nil {
				return err
			}
			if owner, ok := u.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]; ok {
				t.Errorf("%s %s keeps %s=%q", u.GetKind(), u.GetName(), limbov1alpha1.AnnotationPluginResource, owner)
			}
			return nil
		})
		if u.GetUID() != inLimbo[i].GetUID() {
			t.Errorf("%s %s has a new UID: it was deleted", u.GetKind(), u.GetName())
		}
		if _, ok := u.GetAnnotations()[limbov1alpha1.AnnotationDeletionDelay]; ok {
			t.Errorf("%s %s keeps the deletionDelay annotation", u.GetKind(), u.GetName())
		}
	}
	noPendingDeletions(t, b)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		_, err := eventContaining(t, b, "Normal", limbov1alpha1.EventDeletionCancelled, n.uuid, "desired again")
		return err
	})
	n.waitLabelled(t, true) // still tainted: still drained
}
