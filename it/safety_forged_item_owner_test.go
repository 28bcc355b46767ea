package it

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// Tests of an object that another tenant forged as one of a Bundle's plugin
// object items: labelled limbo.dev/pending-deletion and annotated
// limbo.dev/pluginResource with the Bundle's name, in a namespace the victim's
// ServiceAccount may not write. It must not hold the Bundle's teardown (which
// once cancelled it as the victim, was refused, and retried for ever: the
// Bundle, and a deletion of its namespace, hung), nor show in the Bundle's
// status; the Bundle's own items are still cancelled, and nothing is deleted.

// bait is a forged object item: obj, labelled in limbo and annotated with
// owner, created (as the other tenant would) in ns.
func bait(t testing.TB, ns string, obj map[string]any, owner string) *unstructured.Unstructured {
	t.Helper()
	md := obj["metadata"].(map[string]any)
	md["labels"] = map[string]any{limbov1alpha1.LabelPendingDeletion: "true"}
	md["annotations"] = map[string]any{
		limbov1alpha1.AnnotationPluginResource:    owner,
		limbov1alpha1.AnnotationDeletionDelay:     "1s",
		limbov1alpha1.AnnotationDeletionTimestamp: "2020-01-01T00:00:00Z", // long due: sorts first
	}
	return createObject(t, ns, obj)
}

// noEntryFor fails when cur's pendingDeletions or conditions name anything in
// namespace ns.
func noEntryFor(cur *limbov1alpha1.Bundle, ns string) error {
	for _, pd := range cur.Status.PendingDeletions {
		if pd.Namespace == ns {
			return fmt.Errorf("pendingDeletions lists %s %s/%s (%q), another tenant's forged item", pd.Kind, pd.Namespace, pd.Name, pd.Message)
		}
	}
	for _, c := range cur.Status.Conditions {
		if strings.Contains(c.Message, ns+"/") {
			return fmt.Errorf("condition %s names another tenant's forged item: %s", c.Type, c.Message)
		}
	}
	return nil
}

// The security review's case: tenant B forges a ConfigMap naming tenant A's
// Bundle while A's Bundle has a ConfigMap in limbo. A's teardown ends, B's
// ConfigMap is neither deleted nor written (A's ServiceAccount may not), and
// nothing of it shows in A's status or events.
func TestForgedItemOwnerDoesNotHoldTheTeardown(t *testing.T) {
	t.Parallel()
	victim := env.Namespace(t)
	attacker := env.Namespace(t)
	tenant(t, victim, "tenant", "get", "list", "watch", "create", "update", "patch", "delete")
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	db := objectResource(t, "db", configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"}))
	b := createBundleAs(t, victim, "tenant", "shop", keep, db)
	waitReady(t, b)
	updateBundle(t, b, keep) // db goes into limbo: a ConfigMap entry in pendingDeletions
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) == 0 {
			return fmt.Errorf("no pending deletion yet")
		}
		return nil
	})
	forged := bait(t, attacker, configMap("bait", map[string]any{"a": "b"}, nil), victim+"/shop/db")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var cur limbov1alpha1.Bundle
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur)
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := noEntryFor(&cur, attacker); err != nil {
			t.Error(err)
		}
		return fmt.Errorf("Bundle %s still exists: finalizers %v, conditions %+v", b.Name, cur.Finalizers, cur.Status.Conditions)
	})
	after := getObject(t, configMapGVK, attacker, "bait")
	if after == nil || after.GetUID() != forged.GetUID() {
		t.Fatalf("the forged ConfigMap was deleted")
	}
	if after.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "true" {
		t.Errorf("the forged ConfigMap was written as %s's ServiceAccount, which may not: labels %v", victim, after.GetLabels())
	}
	for _, ev := range events(t, b) {
		if strings.Contains(ev.Message, attacker+"/bait") {
			t.Errorf("event %s %q names another tenant's forged item", ev.Reason, ev.Message)
		}
	}
}

// A forged csi-baremetal Volume naming an impersonated node-removal resource,
// in a namespace its ServiceAccount may not write, while the resource leaves
// the Bundle: the resource's real items are cancelled; the forged one is not
// listed in the Bundle's status (it was, as "not judged", retried for ever),
// and is not touched. Then the teardown ends.
func TestForgedItemOwnerNotListedWhenItsResourceLeaves(t *testing.T) {
	ns := env.Namespace(t)
	attacker := env.Namespace(t)
	const sa = "node-admin"
	tenant(t, ns, sa, "get", "list", "watch", "create", "update", "patch", "delete")
	// Cluster-wide rights on csi-baremetal's cluster-scoped kinds; Volumes
	// (namespaced) only in the Bundle's namespace.
	ctx := context.Background()
	name := ns + "-node-removal"
	rules := []rbacv1.PolicyRule{{APIGroups: []string{"csi-baremetal.dell.com"}, Resources: []string{"nodes", "drives", "availablecapacities", "logicalvolumegroups"}, Verbs: []string{"get", "patch", "delete"}}}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"csi-baremetal.dell.com"}, Resources: []string{"volumes"}, Verbs: []string{"get", "patch", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	n := newCSINode(t, ns, "n1", drainTaint)
	b := nodeRemovalBundleAs(t, ns, sa, "1h", map[string]any{})
	inLimbo := n.remove(t, b)
	n.waitPending(t, b, func(limbov1alpha1.PendingDeletion) error { return nil })

	volume := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"NodeId": "elsewhere"}}}
	volume.SetGroupVersionKind(noderemoval.GVK(noderemoval.KindVolume))
	forged := bait(t, attacker, map[string]any{"apiVersion": volume.GetAPIVersion(), "kind": volume.GetKind(),
		"metadata": map[string]any{"name": "bait"}, "spec": volume.Object["spec"]}, ns+"/nodes/"+nrResource)
	t.Cleanup(func() { removeForGood(t, forged.GroupVersionKind(), attacker, "bait") })

	// The resource leaves the Bundle (a ConfigMap stays: not an empty Bundle).
	updateBundle(t, b, objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil)))
	for i, o := range n.objects {
		u := waitObject(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName(), notInLimbo)
		if u.GetUID() != inLimbo[i].GetUID() || u.GetDeletionTimestamp() != nil {
			t.Errorf("%s %s was deleted", u.GetKind(), u.GetName())
		}
	}
	testenv.Consistently(t, 3*time.Second, func() error {
		return noEntryFor(getBundle(t, b), attacker)
	})
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := noEntryFor(cur, attacker); err != nil {
			return err
		}
		if len(cur.Status.PendingDeletions) != 0 {
			return fmt.Errorf("pendingDeletions %+v, want none", cur.Status.PendingDeletions)
		}
		return nil
	})
	after := getObject(t, forged.GroupVersionKind(), attacker, "bait")
	if after == nil || after.GetUID() != forged.GetUID() || after.GetLabels()[limbov1alpha1.LabelPendingDeletion] != "true" {
		t.Errorf("the forged Volume was deleted or written: %v", after)
	}
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
}

// A real item of the Bundle's in another namespace (a csi-baremetal Volume of a
// workload's namespace) is still cancelled at the teardown, never deleted,
// beside a forged one in a third namespace: the Bundle's status listed it.
func TestForgedItemOwnerRealItemElsewhereCancelledAtTeardown(t *testing.T) {
	ns := env.Namespace(t)
	workload := env.Namespace(t)
	attacker := env.Namespace(t)
	n := newCSINode(t, workload, "n1", drainTaint) // its Volume is in workload
	b := nodeRemovalBundle(t, ns, "1h", map[string]any{})
	inLimbo := n.remove(t, b)
	n.waitPending(t, b, func(limbov1alpha1.PendingDeletion) error { return nil })
	forged := bait(t, attacker, map[string]any{"apiVersion": noderemoval.GVK(noderemoval.KindVolume).GroupVersion().String(), "kind": noderemoval.KindVolume,
		"metadata": map[string]any{"name": "bait"}, "spec": map[string]any{"NodeId": "elsewhere"}}, ns+"/nodes/"+nrResource)
	t.Cleanup(func() { removeForGood(t, forged.GroupVersionKind(), attacker, "bait") })

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitBundleGone(t, b)
	for i, o := range n.objects {
		u := waitObject(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName(), notInLimbo)
		if u.GetUID() != inLimbo[i].GetUID() || u.GetDeletionTimestamp() != nil {
			t.Errorf("%s %s/%s was deleted by the teardown", u.GetKind(), u.GetNamespace(), u.GetName())
		}
	}
	if after := getObject(t, forged.GroupVersionKind(), attacker, "bait"); after == nil || after.GetUID() != forged.GetUID() {
		t.Errorf("the forged Volume was deleted")
	}
}
