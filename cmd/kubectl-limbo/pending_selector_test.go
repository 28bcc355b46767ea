package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// selectorObjects is pendingObjects with labels to select by: the Deployment app
// in limbo and the ConfigMap legacy, which only its Bundle reports (its invalid
// delay is never stamped), are labelled app=shop, and so is the Bundle shop,
// whose labels select nothing. The ConfigMap waiting, which only shop reports,
// is gone; a Bundle of team-b reports an item in another cluster.
func selectorObjects() []client.Object {
	objects := pendingObjects()
	for _, obj := range objects {
		switch obj.GetName() {
		case "app", "shop":
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["app"] = "shop"
			obj.SetLabels(labels)
		}
	}
	return append(objects,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "legacy", UID: uid("legacy"),
			Labels:      map[string]string{limbov1alpha1.LabelBundle: "shop", "app": "shop"},
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "forever"}}},
		&limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "clusters", UID: uid("clusters")},
			Status: limbov1alpha1.BundleStatus{PendingDeletions: []limbov1alpha1.PendingDeletion{
				{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "team-b", Name: "data", Cluster: "workload-kubeconfig"},
			}}},
	)
}

// -l selects rows by the labels of the object each row names, as kubectl get -l
// does: the object in limbo, the Tombstone, and for a row only a Bundle's
// status gives, its object as read from the cluster, never the Bundle. A row
// whose object's labels cannot be read is left out, with a warning.
func TestPendingSelector(t *testing.T) {
	const rows = `{range .items[*]}{.namespace}/{.kind}/{.name} {end}`
	const leftOut = "Warning: -l leaves out 1 item in another cluster and 1 item whose object could not be read (gone, or not allowed), which only a Bundle's status reports: their labels cannot be matched; without -l they are listed\n"
	for _, tt := range []struct {
		name     string
		args     []string
		want     string
		wantCode int
		stderr   string
	}{
		{name: "an application's label", args: []string{"-A", "-l", "app=shop", "-o", "jsonpath=" + rows},
			want:   "team-a/Deployment/app team-a/ConfigMap/legacy ",
			stderr: leftOut},
		{name: "the Bundle's label: its objects and Tombstones", args: []string{"-A", "-l", limbov1alpha1.LabelBundle + "=shop", "-o", "jsonpath=" + rows},
			want:   "team-a/Deployment/app team-a/Tombstone/storage-ns-gc-4f7c team-a/ConfigMap/db-config team-a/ConfigMap/cache team-a/ConfigMap/legacy team-a/ConfigMap/negative ",
			stderr: leftOut},
		{name: "a set-based selector", args: []string{"-n", "team-a", "-l", "app notin (shop)," + limbov1alpha1.LabelBundle, "-o", "name"},
			want:   "secret/nodelay\ntombstone.limbo.dev/storage-ns-gc-4f7c\nconfigmap/db-config\nconfigmap/cache\nconfigmap/negative\n",
			stderr: strings.Replace(leftOut, "1 item in another cluster and ", "", 1)},
		{name: "no match", args: []string{"-n", "team-b", "-l", "app=none"},
			stderr: "Warning: -l leaves out 1 item in another cluster, which only a Bundle's status reports: their labels cannot be matched; without -l they are listed\n" +
				"Nothing in limbo with labels app=none in namespace team-b.\n"},
		{name: "an invalid selector", args: []string{"-A", "-l", "app in (shop"}, wantCode: 1,
			stderr: "error: unable to parse requirement: found '', expected: ',' or ')'\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, selectorObjects()...)
			code, out, errOut := f.run(append([]string{"pending"}, tt.args...)...)
			if code != tt.wantCode || out != tt.want || errOut != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant %d, %q, %q", code, out, errOut, tt.wantCode, tt.want, tt.stderr)
			}
		})
	}
}

// The objects and Tombstones are selected by the API server: a big cluster is
// not read whole to show a few rows.
func TestPendingSelectorOnTheServer(t *testing.T) {
	var mu sync.Mutex
	selectors := map[string]string{} // list kind: its label selector
	f := newFixture(t, &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		o := (&client.ListOptions{}).ApplyOptions(opts)
		kind := list.GetObjectKind().GroupVersionKind().Kind
		if _, ok := list.(*limbov1alpha1.TombstoneList); ok {
			kind = "TombstoneList"
		}
		if o.LabelSelector != nil {
			mu.Lock() // the kinds are listed concurrently
			selectors[kind] = o.LabelSelector.String()
			mu.Unlock()
		}
		return c.List(ctx, list, opts...)
	}}, selectorObjects()...)
	if code, _, errOut := f.run("pending", "-A", "-l", "app=shop"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, kind := range []string{"TombstoneList", "ConfigMapList", "DeploymentList", "SecretList"} {
		if got := selectors[kind]; !strings.Contains(got, "app=shop") {
			t.Errorf("%s listed with the label selector %q, want app=shop in it", kind, got)
		}
	}
}

// With -n NS -l, the warning about what the Bundles of NS report in other
// namespaces counts only what -n of those namespaces (or -A) lists with the same
// -l: the items whose objects it selects, by their labels read from the cluster.
func TestPendingSelectorNotShownElsewhere(t *testing.T) {
	objects := nodeRemoval() // csi-admin/csi-nodes reports pvc-w1-data and pvc-w2-data in default
	for _, obj := range objects {
		if obj.GetName() == "pvc-w1-data" {
			obj.GetLabels()["app"] = "shop"
		}
	}
	const scratchUnread = "Warning: -l leaves out 1 item whose object could not be read (gone, or not allowed), which only a Bundle's status reports: their labels cannot be matched; without -l they are listed\n"
	for _, tt := range []struct {
		name   string
		gone   string // the name of an object deleted
		args   []string
		want   string
		stderr string
	}{
		{name: "without -l: both", args: []string{"-n", "csi-admin", "-o", "name"},
			want:   "namespace/w1-scratch\n",
			stderr: "Warning: not shown: 2 items that Bundles of namespace csi-admin report in other namespaces (default); kubectl limbo pending -n default, or -A, lists them\n"},
		{name: "the one -l selects", args: []string{"-n", "csi-admin", "-l", "app=shop", "-o", "name"},
			stderr: "Warning: not shown: 1 item that Bundles of namespace csi-admin report in other namespaces (default); kubectl limbo pending -n default, or -A, lists it\n" + scratchUnread},
		{name: "which -n default -l lists", args: []string{"-n", "default", "-l", "app=shop", "-o", "name"},
			want: "configmap/pvc-w1-data\n"},
		{name: "none -l selects: no warning", args: []string{"-n", "csi-admin", "-l", "app=none", "-o", "name"},
			stderr: scratchUnread},
		// -l there leaves out an item whose object is gone: it is not counted.
		{name: "an item whose object is gone", gone: "pvc-w2-data", args: []string{"-n", "csi-admin", "-l", "app=shop", "-o", "name"},
			stderr: "Warning: not shown: 1 item that Bundles of namespace csi-admin report in other namespaces (default); kubectl limbo pending -n default, or -A, lists it\n" + scratchUnread},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := objects
			if tt.gone != "" {
				objects = slices.DeleteFunc(slices.Clone(objects), func(o client.Object) bool { return o.GetName() == tt.gone })
			}
			f := newFixture(t, nil, objects...)
			code, out, errOut := f.run(append([]string{"pending"}, tt.args...)...)
			if code != 0 || out != tt.want || errOut != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant 0, %q, %q", code, out, errOut, tt.want, tt.stderr)
			}
		})
	}
}
