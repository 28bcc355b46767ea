package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/listpages/listpagestest"
)

// pendingObjects is a cluster with things in limbo in team-a and team-b.
func pendingObjects() []client.Object {
	tomb := &limbov1alpha1.Tombstone{
		ObjectMeta: inLimbo("team-a", "storage-ns-gc-4f7c", "shop", "10m", stampAgo(5*time.Minute)),
		Spec: limbov1alpha1.TombstoneSpec{
			Plugin: "namespace-gc", Resource: "storage-ns-gc",
			Item: limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team"},
		},
		Status: limbov1alpha1.TombstoneStatus{Attempts: 2, LastError: "409: namespace still has volumes"},
	}
	tomb.Finalizers = []string{limbov1alpha1.FinalizerHardDelete}

	bundle := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			// In limbo and listed already: the message is added to its row.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "db-config", Namespace: "team-a",
				DeleteAfter: &metav1.Time{Time: testNow.Add(23*time.Hour + 59*time.Minute)},
				Message:     "delete failed: etcd timeout"},
			// Invalid delay: never stamped nor labelled, only the Bundle knows.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "legacy",
				Message: `invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)`},
			// In limbo and listed, with an invalid delay: the controller's
			// message says what the row's does, and more; it is said once.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "negative", Namespace: "team-a",
				Message: `invalid limbo.dev/deletionDelay "-5m": must not be negative; never deleted until fixed`},
			// Not stamped yet: its countdown waits for the Bundle to be Ready.
			{APIVersion: "v1", Kind: "ConfigMap", Name: "waiting",
				Message: "waiting for every resource of the Bundle to be Ready"},
			// No message: the labelled object itself is the row.
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", Namespace: "team-a"},
		}},
	}

	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Minute))},
		&appsv1.Deployment{ObjectMeta: inLimbo("team-a", "app", "shop", "10m", stampAgo(time.Hour))},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "cache", "shop", "1h", "yesterday")},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "negative", "shop", "-5m", stampAgo(time.Minute))},
		&corev1.Secret{ObjectMeta: inLimbo("team-a", "nodelay", "", "", stampAgo(time.Minute))},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-b", "other", "web", "72h", stampAgo(2*time.Hour))},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "kept", UID: uid("kept"),
			Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}}},
		tomb,
		bundle,
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "web", UID: uid("web")}},
	}
}

func TestPendingTableNamespace(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND              NAME                 BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
Secret            nodelay              <none>   <none>                 due         no limbo.dev/deletionDelay: deleted without delay
Deployment.apps   app                  shop     2026-03-01T11:10:00Z   due
Tombstone         storage-ns-gc-4f7c   shop     2026-03-01T12:05:00Z   5m          namespace-gc: StorageOSNamespace "old-team" (id 4f7c); last error (attempt 2): 409: namespace still has volumes
ConfigMap         db-config            shop     2026-03-02T11:59:00Z   23h         delete failed: etcd timeout
ConfigMap         cache                shop     <unknown>              <unknown>   invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts
ConfigMap         waiting              shop     <none>                 held        waiting for every resource of the Bundle to be Ready
ConfigMap         legacy               shop     <none>                 never       invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)
ConfigMap         negative             shop     <none>                 never       invalid limbo.dev/deletionDelay "-5m": must not be negative; never deleted until fixed
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPendingTableAllNamespaces(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-A")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `NAMESPACE   KIND              NAME                 BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
team-a      Secret            nodelay              <none>   <none>                 due         no limbo.dev/deletionDelay: deleted without delay
team-a      Deployment.apps   app                  shop     2026-03-01T11:10:00Z   due
team-a      Tombstone         storage-ns-gc-4f7c   shop     2026-03-01T12:05:00Z   5m          namespace-gc: StorageOSNamespace "old-team" (id 4f7c); last error (attempt 2): 409: namespace still has volumes
team-a      ConfigMap         db-config            shop     2026-03-02T11:59:00Z   23h         delete failed: etcd timeout
team-b      ConfigMap         other                web      2026-03-04T10:00:00Z   2d22h
team-a      ConfigMap         cache                shop     <unknown>              <unknown>   invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts
team-a      ConfigMap         waiting              shop     <none>                 held        waiting for every resource of the Bundle to be Ready
team-a      ConfigMap         legacy               shop     <none>                 never       invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)
team-a      ConfigMap         negative             shop     <none>                 never       invalid limbo.dev/deletionDelay "-5m": must not be negative; never deleted until fixed
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The same output, run after run.
	for range 5 {
		if _, again, _ := f.run("pending", "-A"); again != out {
			t.Fatalf("output changed between runs:\n%s", again)
		}
	}
}

func TestPendingDefaultNamespaceAndEmpty(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending")
	if code != 0 || out != "" || errOut != "Nothing in limbo in namespace default.\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// failLists makes the fake client fail the metadata-only list of the kinds in
// errs (by list kind, SecretList) with their error.
func failLists(errs map[string]error) *interceptor.Funcs {
	return &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
			if err := errs[list.GetObjectKind().GroupVersionKind().Kind]; err != nil {
				return err
			}
		}
		return c.List(ctx, list, opts...)
	}}
}

func TestPendingSkipsUnlistableTypes(t *testing.T) {
	f := newFixture(t, failLists(map[string]error{
		"SecretList":     apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil),
		"DeploymentList": apierrors.NewMethodNotSupported(schema.GroupResource{Group: "apps", Resource: "deployments"}, "list"),
	}), pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if want := "Warning: not allowed to list secrets; objects of these types in limbo are not shown\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if strings.Contains(out, "nodelay") || strings.Contains(out, "Deployment") || !strings.Contains(out, "db-config") {
		t.Errorf("unexpected rows:\n%s", out)
	}

	// Any other error (a conversion webhook down, a timeout) leaves that type
	// out with a warning, as kubectl get does: the rest is printed, and the
	// command fails. Before, nothing was printed.
	f = newFixture(t, failLists(map[string]error{"ConfigMapList": apierrors.NewServiceUnavailable("try later")}), pendingObjects()...)
	code, out, errOut = f.run("pending", "-n", "team-a")
	wantErr := "Warning: listing configmaps: try later; objects of this type in limbo are not shown\n" +
		"error: the list above is incomplete: 1 resource types could not be listed\n"
	if code != 1 || errOut != wantErr {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, wantErr)
	}
	if strings.Contains(out, "cache") || !strings.Contains(out, "nodelay") {
		t.Errorf("want the rows of the types listed (the Secret nodelay) and no ConfigMap only its label shows (cache):\n%s", out)
	}
}

func TestPendingDiscoveryPartialFailure(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	f.clients.discovery = newTestDiscovery(defaultResources(), &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: apierrors.NewServiceUnavailable("down"),
	}})
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || !strings.Contains(out, "db-config") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if want := "Warning: could not discover metrics.k8s.io/v1beta1; objects of these API groups in limbo are not shown\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

func TestPendingJSON(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a", "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var list pendingList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 8 {
		t.Fatalf("%d items, want 8:\n%s", len(list.Items), out)
	}
	if w := list.Items[5]; w.Name != "waiting" || w.TimeLeft != "held" {
		t.Errorf("the item waiting for the Bundle: %+v, want time left held", w)
	}
	db := list.Items[3]
	if db.Name != "db-config" || db.APIVersion != "v1" || db.Kind != "ConfigMap" || db.TimeLeft != "23h" ||
		db.DeletionDelay != "24h" || db.DeletionTimestamp != "2026-03-01T11:59:00Z" ||
		db.DeleteAfter == nil || !db.DeleteAfter.Equal(time.Date(2026, 3, 2, 11, 59, 0, 0, time.UTC)) {
		t.Errorf("db-config item: %+v", db)
	}

	code, out, _ = f.run("pending", "-n", "team-a", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "timeLeft: 23h") {
		t.Errorf("yaml: exit %d\n%s", code, out)
	}
	code, out, errOut = f.run("pending", "-o", "xml")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, `error: unable to match a printer suitable for the output format "xml", allowed formats are: wide,json,`) {
		t.Errorf("-o xml: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Times are formatted as kubectl's AGE (duration.HumanDuration), rounded up to
// the second.
func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Millisecond:                  "1s",
		45 * time.Second:                  "45s",
		2*time.Minute - 2*time.Second:     "118s", // a 2m delay just after the release (examples/soft-delete)
		24*time.Hour - 2*time.Second:      "23h",
		59*time.Second + time.Millisecond: "60s",
		9*time.Minute + 30*time.Second:    "9m30s",
		time.Hour:                         "60m",
		23*time.Hour + 59*time.Minute:     "23h",
		5*time.Hour + 30*time.Minute:      "5h30m",
		48 * time.Hour:                    "2d",
		76 * time.Hour:                    "3d4h",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestTimeLeftDueAtDeadline(t *testing.T) {
	deadline := testNow.Truncate(time.Second)
	p := pendingItem{DeleteAfter: &deadline, countdown: countdownRunning}
	if got := timeLeftColumn(&p, deadline); got != "due" {
		t.Errorf("at the deadline: %q, want due", got)
	}
	if got := timeLeftColumn(&p, deadline.Add(-time.Second)); got != "1s" {
		t.Errorf("a second before: %q, want 1s", got)
	}
}

// IN-LIMBO of a stamp the controller's clock wrote ahead of this machine's clock
// is 0s, not kubectl's "<invalid>".
func TestInLimboOfAStampAhead(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for stamp, want := range map[string]string{"2026-01-01T00:00:05Z": "0s", "2025-12-31T23:59:00Z": "60s", "yesterday": "<unknown>"} {
		if got := inLimboColumn(&pendingItem{DeletionTimestamp: stamp}, now); got != want {
			t.Errorf("IN-LIMBO of %s at %v = %q, want %q", stamp, now, got, want)
		}
	}
}

// -o wide adds the priority-1 columns DELAY and IN-LIMBO, as kubectl get -o wide
// adds a CRD's priority-1 printer columns.
func TestPendingWide(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a", "-o", "wide")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND              NAME                 BUNDLE   DELETE-AFTER           TIME-LEFT   DELAY       IN-LIMBO    MESSAGE
Secret            nodelay              <none>   <none>                 due         <none>      60s         no limbo.dev/deletionDelay: deleted without delay
Deployment.apps   app                  shop     2026-03-01T11:10:00Z   due         10m         60m
Tombstone         storage-ns-gc-4f7c   shop     2026-03-01T12:05:00Z   5m          10m         5m          namespace-gc: StorageOSNamespace "old-team" (id 4f7c); last error (attempt 2): 409: namespace still has volumes
ConfigMap         db-config            shop     2026-03-02T11:59:00Z   23h         24h         60s         delete failed: etcd timeout
ConfigMap         cache                shop     <unknown>              <unknown>   1h          <unknown>   invalid limbo.dev/deletionTimestamp "yesterday": not an RFC 3339 time; the countdown restarts
ConfigMap         waiting              shop     <none>                 held        <unknown>   <unknown>   waiting for every resource of the Bundle to be Ready
ConfigMap         legacy               shop     <none>                 never       forever     <unknown>   invalid limbo.dev/deletionDelay "forever": not a duration (Go syntax: 10m, 24h, 1h30m)
ConfigMap         negative             shop     <none>                 never       -5m         60s         invalid limbo.dev/deletionDelay "-5m": must not be negative; never deleted until fixed
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// --no-headers drops the header line and nothing else, with -A and -o wide too.
func TestPendingNoHeaders(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	for _, args := range [][]string{{"-A"}, {"-n", "team-a", "-o", "wide"}} {
		_, withHeaders, _ := f.run(append([]string{"pending"}, args...)...)
		code, out, errOut := f.run(append([]string{"pending", "--no-headers"}, args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		header, rows, _ := strings.Cut(withHeaders, "\n")
		if !strings.HasPrefix(header, "NAMESPACE") && !strings.HasPrefix(header, "KIND") {
			t.Fatalf("%v: no header in\n%s", args, withHeaders)
		}
		if fieldsOf(out) != fieldsOf(rows) {
			t.Errorf("%v --no-headers printed\n%s\nwant the rows of\n%s", args, out, withHeaders)
		}
	}
}

// -o name prints each object in limbo as kubectl does, ready for kubectl
// delete or describe.
func TestPendingName(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a", "-o", "name")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `secret/nodelay
deployment.apps/app
tombstone.limbo.dev/storage-ns-gc-4f7c
configmap/db-config
configmap/cache
configmap/waiting
configmap/legacy
configmap/negative
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// fieldsOf is the cells of a table, line by line, without the padding, which
// differs with and without the header.
func fieldsOf(table string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		lines = append(lines, strings.Join(strings.Fields(line), " "))
	}
	return strings.Join(lines, "\n")
}

// A plugin's cluster-scoped object item in limbo (a Csibmnode) is not found by
// the label listing, which covers namespaced kinds: its Bundle's entry is its row.
func TestPendingClusterScopedPluginItem(t *testing.T) {
	bundle := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "csi-admin", Name: "csi-nodes", UID: uid("csi-nodes")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "csi-baremetal.dell.com/v1", Kind: "Node", Name: "csibmnode-w1",
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(time.Minute)}},
		}},
	}
	f := newFixture(t, nil, bundle)
	code, out, errOut := f.run("pending", "-n", "csi-admin")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "Node.csi-baremetal.dell.com   csibmnode-w1   csi-nodes") || !strings.Contains(out, testNow.Add(time.Minute).UTC().Format(time.RFC3339)) {
		t.Errorf("the Csibmnode is not listed with its Bundle and countdown:\n%s", out)
	}
}

// An item in another cluster (deorbit's, in a workload cluster) is a row of its
// own, saying which cluster, even without a message: the local listing cannot see
// it, and a local object of the same name is another object.
func TestPendingItemInAnotherCluster(t *testing.T) {
	f := newFixture(t, nil, itemInAnotherCluster()...)
	code, out, errOut := f.run("pending", "-n", "clusters")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND                    NAME   BUNDLE     DELETE-AFTER           TIME-LEFT   MESSAGE
PersistentVolumeClaim   data   workload   2026-03-01T12:04:00Z   4m          in cluster workload-kubeconfig
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// itemInAnotherCluster is a Bundle with a PVC in limbo in a workload cluster,
// and a local PVC of the same namespace and name, not in limbo.
func itemInAnotherCluster() []client.Object {
	bundle := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "workload", UID: uid("workload")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "clusters", Name: "data", Cluster: "workload-kubeconfig",
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(4 * time.Minute)}},
		}},
	}
	local := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "data", UID: uid("local-data")}}
	return []client.Object{bundle, local}
}

// remoteServiceBundle is Bundle clusters/name with a Service in limbo in
// cluster, its deadline left from now.
func remoteServiceBundle(name, cluster string, left time.Duration) *limbov1alpha1.Bundle {
	return &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name, UID: uid(name)},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "Service", Namespace: "ingress-nginx", Name: "ingress-nginx-controller", Cluster: cluster,
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(left)}},
		}},
	}
}

// -o name names objects for kubectl, which acts on this cluster: an item in
// another cluster is left out, or `| xargs kubectl delete` would delete the
// local object of the same name. stderr says what was left out.
func TestPendingNameLeavesOutOtherClusters(t *testing.T) {
	local := &corev1.ConfigMap{ObjectMeta: inLimbo("clusters", "old", "workload", "1h", stampAgo(time.Minute))}
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		args    []string
		wantOut string
		wantErr string
	}{
		{"one", append(itemInAnotherCluster(), local), []string{"-n", "clusters"}, "configmap/old\n",
			"Warning: -o name leaves out 1 item in another cluster (workload-kubeconfig): kubectl would take its name for an object of this cluster; the table and -o json list it\n"},
		{"two", []client.Object{remoteServiceBundle("east", "east-kubeconfig", 4*time.Minute), remoteServiceBundle("west", "west-kubeconfig", 5*time.Minute)},
			[]string{"-A"}, "",
			"Warning: -o name leaves out 2 items in other clusters (east-kubeconfig, west-kubeconfig): kubectl would take their names for objects of this cluster; the table and -o json list them\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, tc.objs...)
			code, out, errOut := f.run(append([]string{"pending", "-o", "name"}, tc.args...)...)
			if code != 0 || out != tc.wantOut || errOut != tc.wantErr {
				t.Errorf("exit %d, stdout %q, stderr\n%s\nwant stdout %q, stderr\n%s", code, out, errOut, tc.wantOut, tc.wantErr)
			}
		})
	}
}

// Items of the same kind, namespace and name in two other clusters (two workload
// clusters deorbited at once) are two rows: the cluster is part of what names an
// item.
func TestPendingItemsInTwoOtherClusters(t *testing.T) {
	f := newFixture(t, nil, remoteServiceBundle("east", "east-kubeconfig", 4*time.Minute), remoteServiceBundle("west", "west-kubeconfig", 5*time.Minute))
	code, out, errOut := f.run("pending", "-A")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, cluster := range []string{"in cluster east-kubeconfig", "in cluster west-kubeconfig"} {
		if !strings.Contains(out, cluster) {
			t.Errorf("no row %s:\n%s", cluster, out)
		}
	}
}

// A Tombstone of a Bundle being torn down is held, not due: the teardown cancels
// it and the item is kept (DESIGN §4), so it must not read as about to go.
func TestPendingTombstoneOfABundleBeingDeleted(t *testing.T) {
	objects := pendingObjects()
	for _, o := range objects {
		if b, ok := o.(*limbov1alpha1.Bundle); ok {
			b.DeletionTimestamp = &metav1.Time{Time: testNow}
			b.Finalizers = []string{limbov1alpha1.FinalizerTeardown}
		}
	}
	f := newFixture(t, nil, objects...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `Tombstone         storage-ns-gc-4f7c   shop     <none>                 held        namespace-gc: StorageOSNamespace "old-team" (id 4f7c); last error (attempt 2): 409: namespace still has volumes; its Bundle is being deleted: the deletion is cancelled, the item kept`
	if !strings.Contains(trimTrailingSpaces(out), want+"\n") {
		t.Errorf("the Tombstone's row is not held:\n%s\nwant a row\n%s", out, want)
	}
}

// adoptingBundle is Bundle team-a/name whose spec declares the ConfigMaps named
// adopted to adopt them (limbo.dev/adopt).
func adoptingBundle(t *testing.T, name string, adopted ...string) *limbov1alpha1.Bundle {
	t.Helper()
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: uid(name)}}
	for _, cm := range adopted {
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": cm, "annotations": map[string]string{limbov1alpha1.AnnotationAdopt: "true"}}})
		if err != nil {
			t.Fatal(err)
		}
		b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: cm, Object: &runtime.RawExtension{Raw: raw}})
	}
	return b
}

// deorbitLeak is Bundle clusters/x whose plugin resource deorbit has items in
// limbo in namespace apps (one held by a finalizer, which the Bundle reports), a
// cluster-scoped one, and a ConfigMap in limbo in clusters itself.
func deorbitLeak() []client.Object {
	b := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "x", UID: uid("x")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "data", Resource: "deorbit",
				Message: "being deleted; held by finalizers: kubernetes.io/pvc-protection"},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "quiet", Resource: "deorbit",
				DeleteAfter: &metav1.Time{Time: testNow.Add(time.Hour)}},
			{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv-data", Resource: "deorbit",
				DeletionTimestamp: &metav1.Time{Time: testNow.Add(-time.Minute)}, DeleteAfter: &metav1.Time{Time: testNow.Add(time.Minute)}},
		}},
	}
	item := func(name string) *corev1.ConfigMap {
		m := inLimbo("apps", name, "", "1h", stampAgo(0))
		delete(m.Labels, limbov1alpha1.LabelBundle)
		m.Annotations[limbov1alpha1.AnnotationPluginResource] = "clusters/x/deorbit"
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	local := &corev1.ConfigMap{ObjectMeta: inLimbo("clusters", "old", "x", "2h", stampAgo(0))}
	return []client.Object{b, item("data"), item("quiet"), local}
}

// With -n, every row is of that namespace: without -A there is no NAMESPACE
// column, and kubectl takes the names of -o name for objects of the namespace
// asked for (`pending -n clusters -o name | xargs kubectl delete -n clusters`).
// The items a Bundle reports in other namespaces are left out, with a warning
// that counts them all, with a message or not; a cluster-scoped item's row is
// its Bundle's namespace's, and stays. In the items' namespace, their rows carry
// the Bundle's messages, as with -A.
func TestPendingOnlyTheNamespaceAskedFor(t *testing.T) {
	const warning = "Warning: not shown: 2 items that Bundles of namespace clusters report in other namespaces (apps); kubectl limbo pending -n apps, or -A, lists them\n"
	for _, tc := range []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
	}{
		{name: "table", args: []string{"-n", "clusters"}, wantErr: warning,
			wantOut: `KIND               NAME      BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
PersistentVolume   pv-data   x        2026-03-01T12:01:00Z   60s
ConfigMap          old       x        2026-03-01T14:00:00Z   120m
`},
		{name: "name", args: []string{"-n", "clusters", "-o", "name"}, wantErr: warning,
			wantOut: "persistentvolume/pv-data\nconfigmap/old\n"},
		{name: "the items' namespace", args: []string{"-n", "apps", "-o", "name"},
			wantOut: "configmap/data\nconfigmap/quiet\n"},
		{name: "the items' namespace, with the Bundle's message", args: []string{"-n", "apps"},
			wantOut: `KIND        NAME    BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   data    x        2026-03-01T13:00:00Z   60m         being deleted; held by finalizers: kubernetes.io/pvc-protection
ConfigMap   quiet   x        2026-03-01T13:00:00Z   60m
`},
		{name: "every namespace", args: []string{"-A"},
			wantOut: `NAMESPACE   KIND               NAME      BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
clusters    PersistentVolume   pv-data   x        2026-03-01T12:01:00Z   60s
apps        ConfigMap          data      x        2026-03-01T13:00:00Z   60m         being deleted; held by finalizers: kubernetes.io/pvc-protection
apps        ConfigMap          quiet     x        2026-03-01T13:00:00Z   60m
clusters    ConfigMap          old       x        2026-03-01T14:00:00Z   120m
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, deorbitLeak()...)
			code, out, errOut := f.run(append([]string{"pending"}, tc.args...)...)
			if code != 0 || trimTrailingSpaces(out) != tc.wantOut || errOut != tc.wantErr {
				t.Errorf("exit %d, stderr %q, stdout\n%s\nwant stderr %q, stdout\n%s", code, errOut, out, tc.wantErr, tc.wantOut)
			}
		})
	}
}

// A released object (a teardown or a hand-over released it: label, released
// mark, no controller) is held by the reaper while a Bundle decides it: the
// Bundle its label names declares it (its pass adopts it), or has a plugin
// resource and has not finished a pass of its current spec, or has the plugin
// resource that generated it not Ready, or, once it is due, another Bundle of
// its namespace declares it to adopt it. pending shows it held
// and names that Bundle, as the reaper decides (releasedHold); an invalid delay
// is never deleted, held or not.
func TestPendingReleasedHeldByTheReaper(t *testing.T) {
	released := func(name, label, delay, stamp string) *corev1.ConfigMap {
		m := inLimbo("team-a", name, label, delay, stamp)
		m = releasedBy(m, stampAgo(time.Hour))
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	// Its pass of the current spec has not run yet.
	shop := shopDeclaring(t, []string{"redeclared"})
	shop.Generation, shop.Status.ObservedGeneration = 3, 2
	// Its pass of the current spec ran without adopting (a spec error elsewhere).
	stalled := shopDeclaring(t, []string{"stalled-one"})
	stalled.Name, stalled.UID = "stalled", uid("stalled")
	stalled.Generation, stalled.Status.ObservedGeneration = 3, 3
	generating := shopDeclaring(t, nil, "gen")
	generating.Name, generating.UID = "generating", uid("generating")
	generating.Generation, generating.Status.ObservedGeneration = 2, 1
	// Its pass of the current spec ran, its generator Blocked in it.
	blockedGen := shopDeclaring(t, nil, "gen")
	blockedGen.Name, blockedGen.UID = "blocked-gen", uid("blocked-gen")
	blockedGen.Generation, blockedGen.Status.ObservedGeneration = 2, 2
	blockedGen.Status.Resources = []limbov1alpha1.ResourceStatus{{Name: "gen", State: limbov1alpha1.ResourceBlocked}}
	madeByGen := released("made", "blocked-gen", "1h", stampAgo(2*time.Hour))
	madeByGen.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
	tornDown := shopDeclaring(t, []string{"torn"})
	tornDown.Name, tornDown.UID = "torn-down", uid("torn-down")
	tornDown.DeletionTimestamp, tornDown.Finalizers = &metav1.Time{Time: testNow}, []string{limbov1alpha1.FinalizerTeardown}
	objs := []client.Object{
		shop, stalled, generating, tornDown, blockedGen, madeByGen, adoptingBundle(t, "b", "moved", "early", "invalid", "torn"),
		released("redeclared", "shop", "1h", stampAgo(2*time.Hour)),
		released("stalled-one", "stalled", "1h", stampAgo(2*time.Hour)),
		released("generated", "generating", "1h", stampAgo(time.Minute)),
		released("moved", "gone", "", ""),
		released("early", "gone", "1h", stampAgo(time.Minute)),
		released("invalid", "gone", "soon", ""),
		released("torn", "torn-down", "1h", stampAgo(2*time.Hour)),
		released("free", "gone", "1h", stampAgo(2*time.Hour)),
	}

	f := newFixture(t, nil, objs...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND        NAME          BUNDLE        DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   free          gone          2026-03-01T11:00:00Z   due
ConfigMap   early         gone          2026-03-01T12:59:00Z   59m
ConfigMap   moved         gone          <none>                 held        no limbo.dev/deletionDelay: deleted without delay; held by the reaper: Bundle b declares it to adopt it (limbo.dev/adopt); deleted only once no Bundle does
ConfigMap   made          blocked-gen   2026-03-01T11:00:00Z   held        held by the reaper: Bundle blocked-gen, which its label limbo.dev/bundle names, has "gen", the plugin resource that made it, not Ready (see the Bundle's status): it may make it again
ConfigMap   redeclared    shop          2026-03-01T11:00:00Z   held        held by the reaper: Bundle shop, which its label limbo.dev/bundle names, declares it: its next pass adopts it and cancels the deletion
ConfigMap   stalled-one   stalled       2026-03-01T11:00:00Z   held        held by the reaper: Bundle stalled, which its label limbo.dev/bundle names, declares it but has not adopted it (see the Bundle's status)
ConfigMap   torn          torn-down     2026-03-01T11:00:00Z   held        held by the reaper: Bundle b declares it to adopt it (limbo.dev/adopt); deleted only once no Bundle does
ConfigMap   generated     generating    2026-03-01T12:59:00Z   held        held by the reaper: Bundle generating, which its label limbo.dev/bundle names, has not finished a pass of its current spec, whose plugin resources may make it again
ConfigMap   invalid       gone          <none>                 never       invalid limbo.dev/deletionDelay "soon": not a duration (Go syntax: 10m, 24h, 1h30m)
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// The reaper holds only what it acts on, for the Bundles of the object's own
// namespace: an object whose Bundle counts it down (not released) is not held
// for an adopter (that Bundle's pass decides), and a Bundle of another
// namespace, though of the name its label gives, holds nothing. The Bundle its
// label names is found wherever it comes in the namespace's list, first too.
// An invalid delay is never deleted: a hold is not told of.
func TestPendingReaperHoldsOnlyWhatItActsOn(t *testing.T) {
	released := func(name, label string) *corev1.ConfigMap {
		m := inLimbo("team-a", name, label, "1h", stampAgo(2*time.Hour)) // due
		m = releasedBy(m, stampAgo(time.Hour))
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	// First of the namespace's Bundles, its pass of the current spec not run.
	first := shopDeclaring(t, []string{"first", "first-invalid"})
	first.Name, first.UID = "a-first", uid("a-first")
	first.Generation, first.Status.ObservedGeneration = 3, 2
	// Of the name "stray" gives, in another namespace.
	elsewhere := shopDeclaring(t, []string{"stray"})
	elsewhere.Namespace, elsewhere.Name, elsewhere.UID = "team-b", "elsewhere", uid("elsewhere")
	elsewhere.Generation, elsewhere.Status.ObservedGeneration = 3, 2
	objs := []client.Object{
		first, elsewhere, adoptingBundle(t, "b", "counting"),
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "counter", UID: uid("counter")}},
		released("first", "a-first"),
		func() *corev1.ConfigMap {
			cm := released("first-invalid", "a-first")
			cm.Annotations[limbov1alpha1.AnnotationDeletionDelay] = "soon"
			return cm
		}(),
		released("stray", "elsewhere"),
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "counting", "counter", "1h", stampAgo(2*time.Hour))},
	}
	f := newFixture(t, nil, objs...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND        NAME            BUNDLE      DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   counting        counter     2026-03-01T11:00:00Z   due
ConfigMap   stray           elsewhere   2026-03-01T11:00:00Z   due
ConfigMap   first           a-first     2026-03-01T11:00:00Z   held        held by the reaper: Bundle a-first, which its label limbo.dev/bundle names, declares it: its next pass adopts it and cancels the deletion
ConfigMap   first-invalid   a-first     <none>                 never       invalid limbo.dev/deletionDelay "soon": not a duration (Go syntax: 10m, 24h, 1h30m)
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// An aggregated API may ignore the label selector and list every object: only
// those labelled limbo.dev/pending-deletion=true are in limbo.
func TestPendingIgnoresObjectsWithoutTheLabel(t *testing.T) {
	funcs := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
			var kept []client.ListOption
			for _, opt := range opts {
				if _, selector := opt.(client.MatchingLabelsSelector); !selector {
					kept = append(kept, opt)
				}
			}
			opts = kept
		}
		return c.List(ctx, list, opts...)
	}}
	notInLimbo := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "live", UID: uid("live"),
		Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}}}
	notTrue := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "not-true", "shop", "1h", stampAgo(time.Minute))}
	notTrue.Labels[limbov1alpha1.LabelPendingDeletion] = "false"
	inLimboCM := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "old", "shop", "1h", stampAgo(time.Minute))}
	f := newFixture(t, funcs, notInLimbo, notTrue, inLimboCM)
	code, out, errOut := f.run("pending", "-n", "team-a", "-o", "name")
	if code != 0 || out != "configmap/old\n" || errOut != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want configmap/old only", code, errOut, out)
	}
}

// A Bundle whose status lists only the soonest of its entries in limbo
// (MaxPendingDeletionsListed) is named in a warning: items of other clusters
// past them are known to nobody but the controller.
func TestPendingWarnsOfACutStatus(t *testing.T) {
	objs := itemInAnotherCluster()
	objs[0].(*limbov1alpha1.Bundle).Status.PendingDeletionCount = 4000
	f := newFixture(t, nil, objs...)
	code, out, errOut := f.run("pending", "-n", "clusters")
	if code != 0 || !strings.Contains(out, "in cluster workload-kubeconfig") {
		t.Fatalf("exit %d, output %q", code, out)
	}
	const want = "Warning: the status of clusters/workload (1 of 4000) lists only the soonest of its entries in limbo; items of other clusters and cluster-scoped ones past them are not shown, nor its orphans held before their countdown or with an invalid delay, and the others' rows may not show their hold\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// An item with a deletionTimestamp is being deleted, whatever its countdown
// says: a Tombstone force-deleted (its external delete runs), a released object
// held by a finalizer, even one the reaper would hold for a Bundle. It reads
// "deleting", first, as the Bundle's entry for it says ("being deleted; held by
// finalizers: ...", said once), not a countdown that seems to leave time to
// cancel it.
func TestPendingItemsBeingDeleted(t *testing.T) {
	deleting := func(m metav1.ObjectMeta, finalizer string, since time.Duration) metav1.ObjectMeta {
		m.Finalizers = []string{finalizer}
		m.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-since).Truncate(time.Second)}
		return m
	}
	tomb := &limbov1alpha1.Tombstone{
		ObjectMeta: deleting(inLimbo("team-a", "shop-gc-1", "shop", "24h", stampAgo(time.Minute)), limbov1alpha1.FinalizerHardDelete, 30*time.Second),
		Spec:       limbov1alpha1.TombstoneSpec{Plugin: "namespace-gc", Item: limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "1", Name: "old"}},
	}
	data := deleting(inLimbo("team-a", "data", "shop", "24h", stampAgo(time.Hour)), "kubernetes.io/pvc-protection", 10*time.Minute)
	data = releasedBy(data, stampAgo(time.Hour))
	// Bundle shop declares "data" again: the reaper would hold it, were it not
	// being deleted already.
	shop := shopDeclaring(t, []string{"data"})
	shop.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "data",
		DeleteAfter: &metav1.Time{Time: testNow.Add(23 * time.Hour).Truncate(time.Second)},
		Message:     "being deleted; held by finalizers: kubernetes.io/pvc-protection"}}
	// A cluster-scoped item (a plugin's) has no row but its entry's: the entry
	// says it is being deleted.
	shop.Status.PendingDeletions = append(shop.Status.PendingDeletions, limbov1alpha1.PendingDeletion{APIVersion: "csi-baremetal.dell.com/v1", Kind: "Drive", Name: "drive-1",
		DeleteAfter: &metav1.Time{Time: testNow.Add(22 * time.Hour).Truncate(time.Second)},
		Message:     "being deleted; held by finalizers: dell.emc.csi/drive-cleanup"})
	f := newFixture(t, nil, tomb, &corev1.ConfigMap{ObjectMeta: data}, shop,
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "soon", "shop", "1h", stampAgo(59*time.Minute))})
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND                           NAME        BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap                      data        shop     2026-03-02T11:00:00Z   deleting    being deleted; held by finalizers: kubernetes.io/pvc-protection
Drive.csi-baremetal.dell.com   drive-1     shop     2026-03-02T10:00:00Z   deleting    being deleted; held by finalizers: dell.emc.csi/drive-cleanup
Tombstone                      shop-gc-1   shop     2026-03-02T11:59:00Z   deleting    namespace-gc: StorageOSNamespace "old" (id 1); being deleted; held by finalizers: limbo.dev/hard-delete
ConfigMap                      soon        shop     2026-03-01T12:01:00Z   60s
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A stamped orphan that its Bundle holds back (its readiness gate, its guard
// against an emptied spec) is held, as an unstamped one is, though its deadline
// has come: the controller does not delete it while the hold lasts. Its row
// comes from its labelled object, or, cluster-scoped (a plugin's object item),
// from the entry alone; another message (a failed delete) holds nothing.
func TestPendingStampedOrphanHeldByItsBundle(t *testing.T) {
	overdue := &metav1.Time{Time: testNow.Add(-48 * time.Hour).Truncate(time.Second)}
	entry := func(namespace, kind, name, message string) limbov1alpha1.PendingDeletion {
		return limbov1alpha1.PendingDeletion{APIVersion: "v1", Kind: kind, Namespace: namespace, Name: name, DeleteAfter: overdue, Message: message}
	}
	bundle := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")},
		Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
			entry("team-a", "ConfigMap", "not-ready", limbov1alpha1.PendingMessageWaitingForReady),
			entry("team-a", "ConfigMap", "emptied", limbov1alpha1.PendingMessageEmptyBundle),
			entry("team-a", "ConfigMap", "failed", "delete failed: etcd timeout"),
			entry("", "Namespace", "node-item", limbov1alpha1.PendingMessageWaitingForReady),
			// The holds other sources spell their own way: a plugin's delete
			// gate, a plugin that did not judge its item, a Tombstone of a
			// Bundle not Ready (the Tombstone controller waits for it).
			entry("", "Namespace", "gated", limbov1alpha1.PendingMessageDueHeld+"csi-baremetal's operator is not running"),
			entry("", "Namespace", "unjudged", `not judged by resource "nodes" in this pass (its plan failed, is still running, or left it out): the countdown is kept, and `+limbov1alpha1.PendingMessageNotJudged),
			{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Tombstone", Namespace: "team-a", Name: "shop-gc-1", DeleteAfter: overdue,
				Message: `StorageOSNamespace "old"` + limbov1alpha1.PendingMessageHeld + limbov1alpha1.PendingMessageWaitingForReady},
		}},
	}
	objs := []client.Object{bundle, &limbov1alpha1.Tombstone{ObjectMeta: inLimbo("team-a", "shop-gc-1", "shop", "1h", stampAgo(49*time.Hour))}}
	for _, name := range []string{"not-ready", "emptied", "failed"} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", name, "shop", "1h", stampAgo(49*time.Hour))})
	}
	f := newFixture(t, nil, objs...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND        NAME        BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   failed      shop     2026-02-27T12:00:00Z   due         delete failed: etcd timeout
ConfigMap   emptied     shop     2026-02-27T12:00:00Z   held        not deleted: the Bundle's spec has no resources; set spec.allowEmpty: true to delete what it manages
ConfigMap   not-ready   shop     2026-02-27T12:00:00Z   held        waiting for every resource of the Bundle to be Ready
Namespace   gated       shop     2026-02-27T12:00:00Z   held        due; held: csi-baremetal's operator is not running
Namespace   node-item   shop     2026-02-27T12:00:00Z   held        waiting for every resource of the Bundle to be Ready
Namespace   unjudged    shop     2026-02-27T12:00:00Z   held        not judged by resource "nodes" in this pass (its plan failed, is still running, or left it out): the countdown is kept, and nothing is deleted until the plugin judges it again
Tombstone   shop-gc-1   shop     2026-02-27T12:00:00Z   held        StorageOSNamespace "old"; held: waiting for every resource of the Bundle to be Ready
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A Bundle whose spec is invalid decides nothing about its orphans (DESIGN §2:
// a spec error writes and deletes nothing): its objects in limbo are held,
// not due, though their deadlines have come, whatever their entries say. They
// showed as due, and expedite said the next pass would delete them.
func TestPendingOrphansOfAnInvalidSpecAreHeld(t *testing.T) {
	overdue := &metav1.Time{Time: testNow.Add(-48 * time.Hour).Truncate(time.Second)}
	bundle := &limbov1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")},
		Status: limbov1alpha1.BundleStatus{
			Conditions: []metav1.Condition{{Type: limbov1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: limbov1alpha1.ReasonInvalidSpec}},
			PendingDeletions: []limbov1alpha1.PendingDeletion{
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "db", DeleteAfter: overdue},
				{APIVersion: "v1", Kind: "Namespace", Name: "node-item", DeleteAfter: overdue, Message: "delete failed: etcd timeout"},
			}},
	}
	f := newFixture(t, nil, bundle, &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "db", "shop", "1h", stampAgo(49*time.Hour))})
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND        NAME        BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
ConfigMap   db          shop     2026-02-27T12:00:00Z   held        not deleted while the Bundle's spec is invalid (see its Stalled condition)
Namespace   node-item   shop     2026-02-27T12:00:00Z   held        delete failed: etcd timeout; not deleted while the Bundle's spec is invalid (see its Stalled condition)
`
	if got := trimTrailingSpaces(out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// --chunk-size pages every LIST pending makes (the Bundles, the Tombstones and
// the objects of each kind), as kubectl get does, and every page counts: the
// rows are those of one answer per list.
func TestPendingChunkSize(t *testing.T) {
	objects := pendingObjects()
	for _, o := range objects {
		if b, ok := o.(*limbov1alpha1.Bundle); ok && b.Name == "web" {
			b.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "web-legacy",
					Message: `invalid limbo.dev/deletionDelay "soon": not a duration (Go syntax: 10m, 24h, 1h30m)`},
			}
		}
	}
	objects = append(objects, &limbov1alpha1.Tombstone{ObjectMeta: inLimbo("team-b", "web-routes-1", "web", "10m", stampAgo(time.Minute))})
	unpaged := newFixture(t, nil, objects...)
	_, want, _ := unpaged.run("pending", "-A", "--chunk-size", "0")

	pages := map[string][]int64{} // list kind: the limit of each page read
	var mu sync.Mutex
	f := newFixture(t, &interceptor.Funcs{List: listpagestest.List(func(list client.ObjectList, o *client.ListOptions) {
		mu.Lock() // the kinds are listed concurrently
		defer mu.Unlock()
		kind := list.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			kind = fmt.Sprintf("%T", list)
		}
		pages[kind] = append(pages[kind], o.Limit)
	})}, objects...)
	code, out, errOut := f.run("pending", "-A", "--chunk-size", "1")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if out != want {
		t.Errorf("in pages of 1:\n%s\nwant what one answer per list gives:\n%s", out, want)
	}
	for kind, n := range map[string]int{"*v1alpha1.BundleList": 2, "*v1alpha1.TombstoneList": 2, "ConfigMapList": 4} {
		if got := pages[kind]; len(got) != n || slices.ContainsFunc(got, func(limit int64) bool { return limit != 1 }) {
			t.Errorf("%s read with the limits %v, want %d pages of 1", kind, got, n)
		}
	}
}

// -o name prints no namespace: names of several namespaces (-A) come with a
// warning, since kubectl acts on them in one namespace; `| xargs kubectl
// delete` would have deleted the current namespace's objects of those names.
func TestPendingNameOfSeveralNamespacesWarns(t *testing.T) {
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "a", "shop", "1h", stampAgo(time.Minute))},
		&corev1.ConfigMap{ObjectMeta: inLimbo("team-b", "b", "shop", "1h", stampAgo(time.Minute))},
	}
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"pending", "-A", "-o", "name"}, true},
		{[]string{"pending", "-n", "team-a", "-o", "name"}, false},
	} {
		f := newFixture(t, nil, objs...)
		code, _, errOut := f.run(tc.args...)
		if code != 0 || strings.Contains(errOut, "-o name prints no namespace") != tc.warn {
			t.Errorf("%v: exit %d, stderr %q; want a warning %v", tc.args, code, errOut, tc.warn)
		}
	}
}
