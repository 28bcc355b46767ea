package it

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/plugins/noderemoval"
)

// With impersonation, node-removal writes as the Bundle's ServiceAccount, as
// every plugin does (docs/install.md): the drain label on a Csibmnode, which is
// cluster-scoped, needs a ClusterRole that no Role of the Bundle's namespace can
// give. Without it the label write is refused (DrainLabelFailed, naming the
// refusal) and the Csibmnode stays unlabelled; with the ClusterRole that
// docs/plugins/node-removal.md gives, the label is set.
func TestNodeRemovalImpersonatedNeedsClusterRole(t *testing.T) {
	ns := env.Namespace(t)
	const sa = "node-admin"
	tenant(t, ns, sa, "get", "list", "watch", "create", "update", "patch", "delete")
	drained := newCSINode(t, ns, "drained", drainTaint)
	b := nodeRemovalBundleAs(t, ns, sa, "1h", map[string]any{})

	waitEventContaining(t, b, corev1.EventTypeWarning, noderemoval.EventDrainLabelFailed, drained.name, "forbidden", "system:serviceaccount:"+ns+":"+sa)
	if _, ok := drained.csibmnode(t).GetLabels()[noderemoval.LabelDrain]; ok {
		t.Fatal("the Csibmnode was labelled although the ServiceAccount may not patch it")
	}

	ctx := context.Background()
	name := ns + "-node-removal"
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"csi-baremetal.dell.com"},
			Resources: []string{"nodes", "drives", "availablecapacities", "logicalvolumegroups", "volumes"},
			Verbs:     []string{"get", "patch", "delete"},
		}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	drained.waitLabelled(t, true)
}
