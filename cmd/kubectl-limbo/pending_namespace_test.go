package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// nodeRemoval is node-removal's layout: Bundle csi-admin/csi-nodes reports the
// items of its plugin resource in namespace default, one with a message, one
// without, and a cluster-scoped one (its row is in csi-admin).
func nodeRemoval() []client.Object {
	b := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "csi-admin", Name: "csi-nodes", UID: uid("csi-nodes")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "pvc-w1-data", Resource: "nodes",
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-2 * time.Hour)}, DeleteAfter: &metav1.Time{Time: testNow.Add(-time.Hour)},
				Message: "due; waiting for Drive drive-w1-sda to be deleted first"},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "pvc-w2-data", Resource: "nodes",
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(59 * time.Minute)}},
			{APIVersion: "v1", Kind: "Namespace", Name: "w1-scratch", Resource: "nodes",
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(59 * time.Minute)}},
		}},
	}
	item := func(name, stamp string) *corev1.ConfigMap {
		m := inLimbo("default", name, "", "1h", stamp)
		delete(m.Labels, limbov1alpha1.LabelBundle)
		m.Annotations[limbov1alpha1.AnnotationPluginResource] = "csi-admin/csi-nodes/nodes"
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	return []client.Object{b, item("pvc-w1-data", stampAgo(2*time.Hour)), item("pvc-w2-data", stampAgo(time.Minute))}
}

// cutStatus is objs with the status of each Bundle cut: it counts one more
// entry than it lists.
func cutStatus(objs []client.Object) []client.Object {
	for _, obj := range objs {
		if b, ok := obj.(*limbov1alpha1.Bundle); ok {
			b.Status.PendingDeletionCount = int32(len(b.Status.PendingDeletions) + 1)
		}
	}
	return objs
}

// deorbitShop is deorbit's layout: Bundle default/shop reports the items it
// tears down in a workload cluster, in that cluster's namespaces shop and
// workload.
func deorbitShop() []client.Object {
	remote := func(kind, namespace, name string) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: kind, Namespace: namespace, Name: name, Cluster: "workload-kubeconfig", Resource: "deorbit",
			DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(4 * time.Minute)}}
	}
	return []client.Object{&limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop", UID: uid("shop")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			remote("PersistentVolumeClaim", "shop", "data"),
			remote("Service", "shop", "ingress"),
			remote("Service", "workload", "api"),
		}},
	}}
}

// forbidBundles makes the fake client refuse to list Bundles of every namespace
// and, when get is set, to get the Bundles of namespace get: a user whose rights
// are those of some namespaces.
func forbidBundles(get string) *interceptor.Funcs {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, "", nil)
	return &interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*limbov1alpha1.BundleList); ok && (&client.ListOptions{}).ApplyOptions(opts).Namespace == "" {
				return forbidden
			}
			return c.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); ok && key.Namespace == get {
				return forbidden
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}
}

// -n NS lists the rows -A lists with NAMESPACE NS, each as -A shows it: the
// message of a Bundle of another namespace is on the row of the object it
// reports, and an item another namespace's Bundle reports in NS (deorbit's, in
// a workload cluster) is listed. Whatever a Bundle of NS reports in other
// namespaces is not, and a warning says so, message or not.
func TestPendingNamespaceFilter(t *testing.T) {
	const notShownCSI = "Warning: not shown: 2 items that Bundles of namespace csi-admin report in other namespaces (default); kubectl limbo pending -n default, or -A, lists them\n"
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		funcs   *interceptor.Funcs
		args    []string
		wantOut string
		wantErr string
	}{
		{name: "a Bundle of another namespace adds its message", objs: nodeRemoval(), args: []string{"-n", "default"},
			wantOut: `KIND        NAME          BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   pvc-w1-data   csi-nodes   2026-03-01T11:00:00Z   due         due; waiting for Drive drive-w1-sda to be deleted first
ConfigMap   pvc-w2-data   csi-nodes   2026-03-01T12:59:00Z   59m
`},
		{name: "-A says the same", objs: nodeRemoval(), args: []string{"-A"},
			wantOut: `NAMESPACE   KIND        NAME          BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
default     ConfigMap   pvc-w1-data   csi-nodes   2026-03-01T11:00:00Z   due         due; waiting for Drive drive-w1-sda to be deleted first
csi-admin   Namespace   w1-scratch    csi-nodes   2026-03-01T12:59:00Z   59m
default     ConfigMap   pvc-w2-data   csi-nodes   2026-03-01T12:59:00Z   59m
`},
		{name: "the Bundle's namespace warns of every item left out, with a message or not", objs: nodeRemoval(), args: []string{"-n", "csi-admin"},
			wantErr: notShownCSI,
			wantOut: `KIND        NAME         BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
Namespace   w1-scratch   csi-nodes   2026-03-01T12:59:00Z   59m
`},
		{name: "-o name too", objs: nodeRemoval(), args: []string{"-n", "csi-admin", "-o", "name"},
			wantErr: notShownCSI, wantOut: "namespace/w1-scratch\n"},
		{name: "items a Bundle of another namespace reports in another cluster", objs: deorbitShop(), args: []string{"-n", "shop"},
			wantOut: `KIND                    NAME      BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
PersistentVolumeClaim   data      shop     2026-03-01T12:04:00Z   4m          in cluster workload-kubeconfig
Service                 ingress   shop     2026-03-01T12:04:00Z   4m          in cluster workload-kubeconfig
`},
		{name: "nothing in the Bundle's namespace: the warning says where to look", objs: deorbitShop(), args: []string{"-n", "default"},
			wantErr: "Warning: not shown: 3 items that Bundles of namespace default report in other namespaces (shop, workload); kubectl limbo pending -n NAMESPACE, or -A, lists them\n" +
				"Nothing in limbo in namespace default.\n"},
		{name: "not allowed to list Bundles of every namespace: the reporting Bundle is read", objs: nodeRemoval(), funcs: forbidBundles(""),
			args: []string{"-n", "default"}, wantErr: "",
			wantOut: `KIND        NAME          BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   pvc-w1-data   csi-nodes   2026-03-01T11:00:00Z   due         due; waiting for Drive drive-w1-sda to be deleted first
ConfigMap   pvc-w2-data   csi-nodes   2026-03-01T12:59:00Z   59m
`},
		{name: "nor to read the reporting Bundle", objs: nodeRemoval(), funcs: forbidBundles("csi-admin"),
			args:    []string{"-n", "default"},
			wantErr: "Warning: not allowed to get Bundle csi-admin/csi-nodes, which reports 2 items of namespace default: what it says of them (a message, say) is not shown; kubectl limbo pending -n csi-admin, by someone allowed, shows it\n",
			wantOut: `KIND        NAME          BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   pvc-w1-data   csi-nodes   2026-03-01T11:00:00Z   due
ConfigMap   pvc-w2-data   csi-nodes   2026-03-01T12:59:00Z   59m
`},
		// A Bundle gone has nothing to say of its items: no warning.
		{name: "nor to read the reporting Bundle, which is gone", objs: nodeRemoval()[1:], funcs: forbidBundles(""),
			args: []string{"-n", "default"}, wantErr: "",
			wantOut: `KIND        NAME          BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   pvc-w1-data   csi-nodes   2026-03-01T11:00:00Z   due
ConfigMap   pvc-w2-data   csi-nodes   2026-03-01T12:59:00Z   59m
`},
		// A Bundle whose status is cut, but none of whose entries is in the
		// namespace asked for, is not named: what it leaves out concerns that
		// namespace as little as what it lists.
		{name: "a cut status of other namespaces' items", objs: cutStatus(nodeRemoval()), args: []string{"-n", "elsewhere"},
			wantErr: "Nothing in limbo in namespace elsewhere.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.funcs, tc.objs...)
			code, out, errOut := f.run(append([]string{"pending"}, tc.args...)...)
			if code != 0 || trimTrailingSpaces(out) != tc.wantOut || errOut != tc.wantErr {
				t.Errorf("exit %d, stderr\n%s\nstdout\n%s\nwant stderr\n%s\nstdout\n%s", code, errOut, out, tc.wantErr, tc.wantOut)
			}
		})
	}
}

// DELAY is the object's limbo.dev/deletionDelay whichever source gives the row:
// the same value reads the same on the row of a labelled object and on one only a
// Bundle's status gives (an orphan never labelled, for an invalid delay, or not
// stamped yet). The plugin reads the object when it can; else the value an
// invalid delay's message quotes; else <unknown>.
func TestPendingDelayOfARowFromStatus(t *testing.T) {
	released := func(name, delay, stamp string) *corev1.ConfigMap {
		m := inLimbo("team-a", name, "gone", delay, stamp)
		m = releasedBy(m, stampAgo(time.Hour))
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	orphan := func(name, delay string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: uid(name),
			Labels:      map[string]string{limbov1alpha1.LabelBundle: "shop"},
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: delay}}}
	}
	invalid := func(v string) string {
		_, err := softdelete.ParseDelay(v)
		return err.Error() + "; never deleted until fixed"
	}
	bundle := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			// Its object is there, unlabelled: read.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "orphan-forever", Message: invalid("forever")},
			// Its object cannot be read (gone since): the message names the value.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "gone-forever", Message: invalid("forever")},
			// Not stamped yet, the object read.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "waiting", Message: "waiting for every resource of the Bundle to be Ready"},
			// Not stamped yet, the object gone: nothing tells.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "waiting-gone", Message: "waiting for every resource of the Bundle to be Ready"},
			// In another cluster: only the message can tell.
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "remote-forever", Cluster: "workload-kubeconfig", Message: invalid("forever")},
		}},
	}
	f := newFixture(t, nil, bundle, released("released-forever", "forever", ""), orphan("orphan-forever", "forever"), orphan("waiting", "2h"))

	code, out, errOut := f.run("pending", "-n", "team-a", "-o", "wide")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND        NAME               BUNDLE   DELETE-AFTER   TIME-LEFT   DELAY       IN-LIMBO    MESSAGE
ConfigMap   waiting            shop     <none>         held        2h          <unknown>   waiting for every resource of the Bundle to be Ready
ConfigMap   waiting-gone       shop     <none>         held        <unknown>   <unknown>   waiting for every resource of the Bundle to be Ready
ConfigMap   gone-forever       shop     <none>         never       forever     <unknown>   invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed
ConfigMap   orphan-forever     shop     <none>         never       forever     <unknown>   invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed
ConfigMap   released-forever   gone     <none>         never       forever     <unknown>   invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)
ConfigMap   remote-forever     shop     <none>         never       forever     <unknown>   in cluster workload-kubeconfig; invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m); never deleted until fixed
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// -o json has the same deletionDelay.
	code, out, errOut = f.run("pending", "-n", "team-a", "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("-o json: exit %d, stderr %q", code, errOut)
	}
	var list pendingList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, item := range list.Items {
		got[item.Name] = item.DeletionDelay
	}
	wantDelays := map[string]string{"waiting": "2h", "waiting-gone": "", "gone-forever": "forever", "orphan-forever": "forever",
		"released-forever": "forever", "remote-forever": "forever"}
	for name, delay := range wantDelays {
		if got[name] != delay {
			t.Errorf("-o json: deletionDelay of %s = %q, want %q", name, got[name], delay)
		}
	}
}
