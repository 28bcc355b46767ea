package it

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// examples/node-removal works as its README says: the Bundle goes Ready on the
// example's cluster, the taint labels worker-1's Csibmnode, and deleting worker-1
// puts its five resources in limbo.
func TestNodeRemovalExample(t *testing.T) {
	dir := filepath.Join(env.RepoRoot, "examples", "node-removal")
	objects := readManifests(t, filepath.Join(dir, "cluster.yaml"))
	ns := env.Namespace(t)
	for _, o := range objects {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		t.Cleanup(func() { removeForGood(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName()) })
	}
	b := readBundleFile(t, filepath.Join(dir, "bundle.yaml"))
	b.Namespace = ns
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), b)
		waitGone(t, limbov1alpha1.BundleGVK, ns, b.Name)
	})
	waitNodeRemovalReady(t, b, "Csibmnodes")

	w1 := &csiNode{name: "worker-1"}
	for _, o := range objects {
		if o.GetAPIVersion() == noderemoval.Group+"/"+noderemoval.Version && strings.Contains(o.GetName(), "w1") {
			w1.objects = append(w1.objects, o)
		}
		if o.GetKind() == noderemoval.KindCsibmnode && o.GetName() == "csibmnode-w1" {
			w1.uuid = o.GetName() // the Csibmnode's name, for csibmnode()
		}
	}
	if len(w1.objects) != 5 {
		t.Fatalf("cluster.yaml: %d csi-baremetal resources of worker-1, want 5", len(w1.objects))
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var node corev1.Node
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: w1.name}, &node); err != nil {
			return err
		}
		node.Spec.Taints = []corev1.Taint{drainTaint}
		return env.Client.Update(context.Background(), &node)
	})
	w1.waitLabelled(t, true)
	deleteNode(t, w1.name)
	w1.waitPending(t, b, func(pd limbov1alpha1.PendingDeletion) error {
		if pd.DeleteAfter == nil {
			return fmt.Errorf("no deadline")
		}
		return nil
	})
}
