package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// A pod matching nodePodSelector still bound to the removed node holds the
// deletion past the deadline, with the reason in pendingDeletions; a pod that
// does not match holds nothing; once the pod is gone, the resources go.
func TestNodeRemovalPodGate(t *testing.T) {
	ns := env.Namespace(t)
	n := newCSINode(t, ns, "n1", drainTaint)
	pod := func(name string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{NodeName: n.name, Containers: []corev1.Container{{Name: "c", Image: "csi-baremetal-node"}}}}
		if err := env.Client.Create(context.Background(), p); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		return p
	}
	csiPod := pod("csi-node", map[string]string{"app": "csi-baremetal-node"})
	pod("other", map[string]string{"app": "web"})
	b := nodeRemovalBundle(t, ns, "2s", map[string]any{"nodePodSelector": map[string]any{"matchLabels": map[string]any{"app": "csi-baremetal-node"}}})
	n.waitLabelled(t, true)
	deleteNode(t, n.name)

	hold := fmt.Sprintf("held: pod %s/csi-node (nodePodSelector) is still bound to node %s", ns, n.name)
	n.waitPending(t, b, func(pd limbov1alpha1.PendingDeletion) error {
		if pd.DeleteAfter == nil || time.Now().Before(pd.DeleteAfter.Time) || !strings.Contains(pd.Message, hold) {
			return fmt.Errorf("not held past its deadline by the pod: %+v", pd)
		}
		return nil
	})
	for i, u := range n.live(t) {
		if u == nil || u.GetDeletionTimestamp() != nil {
			t.Fatalf("%s %s was deleted while the pod was bound", n.objects[i].GetKind(), n.objects[i].GetName())
		}
	}

	// There is no kubelet: the pod goes at once only with a zero grace period.
	if err := env.Client.Delete(context.Background(), csiPod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for _, o := range n.objects[:4] {
		waitGone(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if c := n.csibmnode(t); c != nil && c.GetDeletionTimestamp() == nil {
			return fmt.Errorf("Csibmnode %s not deleted", n.uuid)
		}
		return nil
	})
}
