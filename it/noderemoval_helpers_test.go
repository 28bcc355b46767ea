package it

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// Helpers of the node-removal tests (noderemoval_*). There is no csi-baremetal
// in the local control plane: the tests create its custom resources (CRDs in
// it/testdata/crds/csi-baremetal.yaml) and the Nodes, and play its controllers.
// node-removal judges every Node of the cluster, so these tests do not run in
// parallel: one test's Bundle would judge another's Nodes.

const nrResource = "node-removal"

var nodeGVK = schema.GroupVersionKind{Version: "v1", Kind: "Node"}

// csiNode is a Kubernetes Node with its csi-baremetal resources: a Csibmnode
// (finalizer kept at removal), a Drive, an AvailableCapacity, a
// LogicalVolumeGroup and a Volume (their finalizers cleared at removal).
type csiNode struct {
	name, uuid, ns string
	// objects are the five csi-baremetal resources, in delete order.
	objects []*unstructured.Unstructured
}

// drainTaint is node-removal's default drain taint.
var drainTaint = corev1.Taint{Key: noderemoval.LabelDrain, Value: noderemoval.DrainValue, Effect: corev1.TaintEffectNoSchedule}

// newCSINode creates a Node (with taints) named after the test's namespace and
// suffix, and its csi-baremetal resources (the Volume in ns). Everything is
// removed when the test ends, finalizers stripped.
func newCSINode(t testing.TB, ns, suffix string, taints ...corev1.Taint) *csiNode {
	t.Helper()
	n := &csiNode{name: ns + "-" + suffix, ns: ns}
	n.uuid = n.name + "-uuid"
	createNode(t, n.name, taints...)
	csi := func(kind, ns, name string, spec map[string]any, finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(noderemoval.GVK(kind))
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetFinalizers(finalizers)
		return u
	}
	n.objects = []*unstructured.Unstructured{
		csi(noderemoval.KindDrive, "", n.name+"-drive", map[string]any{"NodeId": n.uuid, "SerialNumber": "S1"}),
		csi(noderemoval.KindAvailableCapacity, "", n.name+"-ac", map[string]any{"NodeId": n.uuid, "Size": int64(1 << 30)}),
		csi(noderemoval.KindLogicalVolumeGroup, "", n.name+"-lvg", map[string]any{"Node": n.uuid}, noderemoval.FinalizerLVG),
		csi(noderemoval.KindVolume, ns, n.name+"-volume", map[string]any{"NodeId": n.uuid}, noderemoval.FinalizerVolume),
		csi(noderemoval.KindCsibmnode, "", n.uuid, map[string]any{"UUID": n.uuid, "Addresses": map[string]any{"Hostname": n.name, "InternalIP": "10.0.0.1"}}, noderemoval.FinalizerCsibmnode),
	}
	for _, o := range n.objects {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range n.objects {
			removeForGood(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		}
		removeForGood(t, nodeGVK, "", n.name)
	})
	return n
}

// createNode creates a Kubernetes Node; the local control plane has no kubelet,
// so it is an API object only.
func createNode(t testing.TB, name string, taints ...corev1.Taint) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}, Spec: corev1.NodeSpec{Taints: taints}}
	if err := env.Client.Create(context.Background(), node); err != nil {
		t.Fatalf("create Node %s: %v", name, err)
	}
	return node
}

// deleteNode deletes a Node and waits until it is gone.
func deleteNode(t testing.TB, name string) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("delete Node %s: %v", name, err)
	}
	waitGone(t, nodeGVK, "", name)
}

// removeForGood strips an object's finalizers and deletes it (test cleanup).
func removeForGood(t testing.TB, gvk schema.GroupVersionKind, ns, name string) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	ctx := context.Background()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Client.Patch(ctx, u, patch); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: strip finalizers of %s %s: %v", gvk.Kind, name, err)
	}
	if err := env.Client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: delete %s %s: %v", gvk.Kind, name, err)
	}
}

// csibmnode is n's Csibmnode as it is now.
func (n *csiNode) csibmnode(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	return getObject(t, noderemoval.GVK(noderemoval.KindCsibmnode), "", n.uuid)
}

// waitLabelled waits until n's Csibmnode has (or lacks) the drain label.
func (n *csiNode) waitLabelled(t testing.TB, want bool) {
	t.Helper()
	waitObject(t, noderemoval.GVK(noderemoval.KindCsibmnode), "", n.uuid, func(u *unstructured.Unstructured) error {
		if got := u.GetLabels()[noderemoval.LabelDrain] == noderemoval.DrainValue; got != want {
			return fmt.Errorf("Csibmnode %s: drain label present = %v, want %v (labels %v)", n.uuid, got, want, u.GetLabels())
		}
		return nil
	})
}

// live returns n's resources as they are now, nil for those gone.
func (n *csiNode) live(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, len(n.objects))
	for i, o := range n.objects {
		out[i] = getObject(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
	}
	return out
}

// nodeRemovalBundle creates a Bundle with one node-removal resource and deletes
// it (waiting until it is gone) when the test ends, before anything else goes, so
// that no Bundle of an earlier test judges a later test's nodes. It also creates
// a Node that stays: a cluster has nodes, and an empty Node listing computes no
// orphans (the safety rule).
func nodeRemovalBundle(t testing.TB, ns, delay string, spec map[string]any) *limbov1alpha1.Bundle {
	t.Helper()
	return nodeRemovalBundleAs(t, ns, "", delay, spec)
}

// nodeRemovalBundleAs is nodeRemovalBundle writing as serviceAccount ("": as limbo).
func nodeRemovalBundleAs(t testing.TB, ns, serviceAccount, delay string, spec map[string]any) *limbov1alpha1.Bundle {
	t.Helper()
	createNode(t, ns+"-stays")
	t.Cleanup(func() { removeForGood(t, nodeGVK, "", ns+"-stays") })
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	b := createBundleAs(t, ns, serviceAccount, "nodes", limbov1alpha1.Resource{Name: nrResource, Plugin: &limbov1alpha1.PluginResource{
		Name: noderemoval.Name, DeletionDelay: delay, Spec: &apiextensionsv1.JSON{Raw: raw}}})
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), b); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete Bundle: %v", err)
		}
		waitGone(t, limbov1alpha1.BundleGVK, b.Namespace, b.Name)
	})
	return b
}

// waitNodeRemovalReady waits until the Bundle is Ready and its resource's message
// contains part (the plugin ran on what the test set up).
func waitNodeRemovalReady(t testing.TB, b *limbov1alpha1.Bundle, part string) *limbov1alpha1.Bundle {
	t.Helper()
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionIs(cur, "Ready", metav1.ConditionTrue, ""); err != nil {
			return err
		}
		if st := resourceStatus(cur, nrResource); st == nil || !strings.Contains(st.Message, part) {
			return fmt.Errorf("resource %s: %+v, want a message with %q", nrResource, st, part)
		}
		return nil
	})
}

// waitPending waits until the Bundle lists exactly n's five resources in
// pendingDeletions, each accepted by check, and returns the entries by name.
func (n *csiNode) waitPending(t testing.TB, b *limbov1alpha1.Bundle, check func(limbov1alpha1.PendingDeletion) error) map[string]limbov1alpha1.PendingDeletion {
	t.Helper()
	var byName map[string]limbov1alpha1.PendingDeletion
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		byName = map[string]limbov1alpha1.PendingDeletion{}
		for _, pd := range cur.Status.PendingDeletions {
			byName[pd.Name] = pd
		}
		if len(byName) != len(n.objects) {
			return fmt.Errorf("pendingDeletions %+v, want the %d resources of node %s", cur.Status.PendingDeletions, len(n.objects), n.name)
		}
		for _, o := range n.objects {
			pd, ok := byName[o.GetName()]
			if !ok || pd.Kind != o.GetKind() || pd.Namespace != o.GetNamespace() {
				return fmt.Errorf("pendingDeletions %+v lacks %s %s/%s", cur.Status.PendingDeletions, o.GetKind(), o.GetNamespace(), o.GetName())
			}
			if err := check(pd); err != nil {
				return fmt.Errorf("%s %s: %w", pd.Kind, pd.Name, err)
			}
		}
		return nil
	})
	return byName
}

// remove drains n (its Csibmnode labelled), deletes its Node, and waits until
// its resources are in limbo for b; it returns them as they were then.
func (n *csiNode) remove(t testing.TB, b *limbov1alpha1.Bundle) []*unstructured.Unstructured {
	t.Helper()
	n.waitLabelled(t, true)
	deleteNode(t, n.name)
	return n.waitAllInLimbo(t, b)
}

// waitAllInLimbo waits until each of n's resources is stamped, labelled and owned
// by b's resource, without the bundle label, and returns them.
func (n *csiNode) waitAllInLimbo(t testing.TB, b *limbov1alpha1.Bundle) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range n.objects {
		u, _ := waitInLimbo(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		if owner := u.GetAnnotations()[limbov1alpha1.AnnotationPluginResource]; owner != b.Namespace+"/"+b.Name+"/"+nrResource {
			t.Errorf("%s %s: %s = %q", u.GetKind(), u.GetName(), limbov1alpha1.AnnotationPluginResource, owner)
		}
		if _, ok := u.GetLabels()[limbov1alpha1.LabelBundle]; ok {
			t.Errorf("%s %s carries the %s label: the reaper would take it for a released object", u.GetKind(), u.GetName(), limbov1alpha1.LabelBundle)
		}
		out = append(out, u)
	}
	return out
}

// podOn creates a pod bound to node nodeName (there is no scheduler or kubelet:
// it stays as created).
func (n *csiNode) podOn(t testing.TB, ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "csi-baremetal-node"}}}}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	return p
}

// waitHeldByPod waits until the node's resources are past their deadline, held
// by pod ns/name bound to node nodeName, and checks that none was deleted.
func (n *csiNode) waitHeldByPod(t testing.TB, b *limbov1alpha1.Bundle, ns, name, nodeName string) {
	t.Helper()
	hold := fmt.Sprintf("held: pod %s/%s (nodePodSelector) is still bound to node %s", ns, name, nodeName)
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
}

// deletePodAndWaitRemoved deletes the pod that held the node's resources and
// waits until they are gone, the Csibmnode last (being deleted: its finalizer
// is csi-baremetal's to clear).
func (n *csiNode) deletePodAndWaitRemoved(t testing.TB, pod *corev1.Pod) {
	t.Helper()
	// There is no kubelet: the pod goes at once only with a zero grace period.
	if err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
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
