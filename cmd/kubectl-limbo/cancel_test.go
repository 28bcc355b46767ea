package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

func bundleOwner(name string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: name, UID: uid(name),
		Controller: ptr(controller), BlockOwnerDeletion: ptr(true),
	}
}

func TestCancel(t *testing.T) {
	meta := inLimbo("team-a", "app", "shop", "24h", stampAgo(time.Hour))
	meta.Labels["app"] = "web"
	meta.Annotations["team"] = "a"
	otherOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "anchor", UID: uid("anchor")}
	// A Bundle that is an owner but not the controller is kept too.
	observer := bundleOwner("observer", false)
	meta.OwnerReferences = []metav1.OwnerReference{otherOwner, bundleOwner("shop", true), observer}
	deploy := &appsv1.Deployment{ObjectMeta: meta}
	f := newFixture(t, nil, deploy)

	code, out, errOut := f.run("cancel", "-n", "team-a", "deployment.apps/app")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `deployment.apps/app: deletion cancelled; removed owner reference to Bundle "shop", annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.
No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation limbo.dev/adopt: "true".
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}

	var got appsv1.Deployment
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(deploy), &got); err != nil {
		t.Fatal(err)
	}
	if want := []metav1.OwnerReference{otherOwner, observer}; !reflect.DeepEqual(got.OwnerReferences, want) {
		t.Errorf("owner references %+v, want %+v", got.OwnerReferences, want)
	}
	if want := map[string]string{"app": "web"}; !reflect.DeepEqual(got.Labels, want) {
		t.Errorf("labels %v, want %v", got.Labels, want)
	}
	if want := map[string]string{"team": "a", limbov1alpha1.AnnotationDeletionDelay: "24h"}; !reflect.DeepEqual(got.Annotations, want) {
		t.Errorf("annotations %v, want %v", got.Annotations, want)
	}

	// Now it is not in limbo any more.
	code, _, errOut = f.run("cancel", "-n", "team-a", "deployment.apps/app")
	if want := "error: deployment.apps/app is not in limbo: it has neither the limbo.dev/deletionTimestamp annotation nor the limbo.dev/pending-deletion label, so there is no deletion to cancel\n"; code != 1 || errOut != want {
		t.Errorf("second cancel: exit %d, stderr\n%s\nwant\n%s", code, errOut, want)
	}
}

func TestCancelOnlyBundleOwner(t *testing.T) {
	meta := inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Hour))
	meta.OwnerReferences = []metav1.OwnerReference{bundleOwner("shop", true)}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"host": "db.internal"}}
	f := newFixture(t, nil, cm)

	if code, _, errOut := f.run("cancel", "-n", "team-a", "configmap", "db-config"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 || len(got.Labels) != 0 || got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "" {
		t.Errorf("left: owners %v, labels %v, annotations %v", got.OwnerReferences, got.Labels, got.Annotations)
	}
	if got.Data["host"] != "db.internal" {
		t.Errorf("data changed: %v", got.Data)
	}
}

// TestCancelReleased cancels an object released by a teardown: no owner
// reference any more, only the label and the stamp.
func TestCancelReleased(t *testing.T) {
	meta := inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Hour))
	meta.Annotations[limbov1alpha1.AnnotationReleased] = stampAgo(time.Hour)
	cm := &corev1.ConfigMap{ObjectMeta: meta}
	f := newFixture(t, nil, cm)
	code, out, errOut := f.run("cancel", "-n", "team-a", "configmap/db-config")
	if code != 0 || !strings.HasPrefix(out, "configmap/db-config: deletion cancelled; removed annotation limbo.dev/deletionTimestamp, annotation limbo.dev/released, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// An ordinary unmanaged object: no limbo marker is left.
	got := &corev1.ConfigMap{}
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{limbov1alpha1.AnnotationDeletionTimestamp, limbov1alpha1.AnnotationReleased} {
		if _, ok := got.Annotations[key]; ok {
			t.Errorf("annotation %s left: %v", key, got.Annotations)
		}
	}
}

// TestCancelConflict checks that an owner reference added between read and
// patch is not lost: the merge patch replaces the list, so it carries the
// resourceVersion read, fails with a Conflict and is redone.
func TestCancelConflict(t *testing.T) {
	meta := inLimbo("team-a", "db-config", "shop", "24h", stampAgo(time.Hour))
	meta.OwnerReferences = []metav1.OwnerReference{bundleOwner("shop", true)}
	cm := &corev1.ConfigMap{ObjectMeta: meta}
	added := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "anchor", UID: uid("anchor")}
	patches := 0
	funcs := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		patches++
		if patches == 1 {
			var live corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &live); err != nil {
				return err
			}
			live.OwnerReferences = append(live.OwnerReferences, added)
			if err := c.Update(ctx, &live); err != nil {
				return err
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	f := newFixture(t, funcs, cm)
	if code, _, errOut := f.run("cancel", "-n", "team-a", "configmap/db-config"); code != 0 || patches != 2 {
		t.Fatalf("exit %d, %d patches, stderr %q", code, patches, errOut)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if want := []metav1.OwnerReference{added}; !reflect.DeepEqual(got.OwnerReferences, want) {
		t.Errorf("owner references %+v, want %+v", got.OwnerReferences, want)
	}
}

func TestCancelTombstoneRefused(t *testing.T) {
	tomb := &limbov1alpha1.Tombstone{
		ObjectMeta: inLimbo("team-a", "storage-ns-gc-4f7c", "shop", "10m", stampAgo(time.Minute)),
		Spec: limbov1alpha1.TombstoneSpec{
			Plugin: "namespace-gc", Resource: "storage-ns-gc",
			Item: limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "4f7c", Name: "old-team on StorageOS http://storageos:5705"},
		},
	}
	f := newFixture(t, nil, tomb)
	code, out, errOut := f.run("cancel", "-n", "team-a", "tombstones/storage-ns-gc-4f7c")
	want := `error: cannot cancel tombstone.limbo.dev/storage-ns-gc-4f7c: a Tombstone stands for an external item (namespace-gc: StorageOSNamespace "old-team on StorageOS http://storageos:5705" (id 4f7c)), ` +
		`and the plugin would find that item again and put it back in limbo. To keep the item, add it to the plugin's exclude list ` +
		`(plugin.spec.exclude of resource "storage-ns-gc" in Bundle team-a/shop), or re-create what makes it desired (for namespace-gc: the Kubernetes Namespace "old-team"). ` +
		"Deleting the Tombstone would delete the item now\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, want)
	}
	var got limbov1alpha1.Tombstone
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(tomb), &got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != "999" {
		t.Errorf("the Tombstone was written")
	}
}

// A plugin's object item in limbo is refused like a Tombstone: its plugin would
// stamp it again on its next pass, so "cancelled" would be a lie.
func TestCancelPluginItemRefused(t *testing.T) {
	meta := inLimbo("team-a", "worker-1-volume", "", "1h", stampAgo(time.Minute))
	delete(meta.Labels, limbov1alpha1.LabelBundle) // plugin items never carry it
	meta.Annotations[limbov1alpha1.AnnotationPluginResource] = "team-a/nodes/node-removal"
	cm := &corev1.ConfigMap{ObjectMeta: meta}
	f := newFixture(t, nil, cm)
	code, out, errOut := f.run("cancel", "-n", "team-a", "configmap/worker-1-volume")
	want := `it is in limbo for plugin resource "node-removal" of Bundle team-a/nodes (annotation limbo.dev/pluginResource), and the plugin would find it again`
	if code != 1 || out != "" || !strings.Contains(errOut, "cannot cancel") || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and an error containing %q", code, out, errOut, want)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if _, stamped := got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp]; !stamped || got.Labels[limbov1alpha1.LabelPendingDeletion] != "true" {
		t.Errorf("the item was written: annotations %v, labels %v", got.Annotations, got.Labels)
	}
}
