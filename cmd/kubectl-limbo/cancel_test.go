package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	f := newFixture(t, nil, deploy, anchor(), &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "observer", UID: uid("observer")}})

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

// anchor is the ConfigMap team-a/anchor, an owner outside any Bundle.
func anchor() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "anchor", UID: uid("anchor")}}
}

// An object cancel takes from its Bundle is kept: the owner references that
// would have the garbage collector delete it go with the Bundle's — to the
// Bundle's other objects (a template may name one as owner), which the Bundle
// deletes, and to owners that are gone — and an owner outside the Bundle stays.
func TestCancelDropsDoomedOwners(t *testing.T) {
	meta := inLimbo("team-a", "cache", "shop", "24h", stampAgo(time.Hour))
	sibling := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web", UID: uid("web")}
	gone := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uid("ghost")}
	replaced := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "reborn", UID: uid("reborn before")}
	external := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "anchor", UID: uid("anchor")}
	unserved := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Gizmo", Name: "g", UID: uid("g")}
	meta.OwnerReferences = []metav1.OwnerReference{sibling, gone, replaced, external, unserved, bundleOwner("shop", true)}
	web := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: uid("web"),
		Labels: map[string]string{limbov1alpha1.LabelBundle: "shop"}}}
	reborn := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reborn", UID: uid("reborn")}}
	cm := &corev1.ConfigMap{ObjectMeta: meta}
	f := newFixture(t, nil, cm, web, reborn, anchor())

	code, out, errOut := f.run("cancel", "-n", "team-a", "configmap/cache")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `configmap/cache: deletion cancelled; removed owner reference to ConfigMap "web" (an object of Bundle "shop"), owner reference to ConfigMap "ghost" (gone), owner reference to ConfigMap "reborn" (gone), owner reference to Bundle "shop", annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.`
	if !strings.HasPrefix(out, want) {
		t.Errorf("got\n%s\nwant it to start with\n%s", out, want)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if want := []metav1.OwnerReference{external, unserved}; !reflect.DeepEqual(got.OwnerReferences, want) {
		t.Errorf("owner references %+v, want %+v", got.OwnerReferences, want)
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
	meta = releasedBy(meta, stampAgo(time.Hour))
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
	funcs, patches := changedBeforeFirstPatch(func(live *corev1.ConfigMap) { live.OwnerReferences = append(live.OwnerReferences, added) })
	f := newFixture(t, funcs, cm, anchor())
	if code, _, errOut := f.run("cancel", "-n", "team-a", "configmap/db-config"); code != 0 || *patches != 2 {
		t.Fatalf("exit %d, %d patches, stderr %q", code, *patches, errOut)
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

// The refusal of a Tombstone says how to keep its item, as its plugin decides
// what it deletes: a namespace-gc item named by id only names that Namespace.
func TestCancelTombstoneRefusedSaysHowToKeep(t *testing.T) {
	for _, tc := range []struct {
		plugin string
		item   limbov1alpha1.ExternalItem
		want   string
	}{
		{"namespace-gc", limbov1alpha1.ExternalItem{Kind: "StorageOSNamespace", ID: "old-team"},
			`or re-create what makes it desired (for namespace-gc: the Kubernetes Namespace "old-team"). Deleting the Tombstone would delete the item now`},
		{"route-gc", limbov1alpha1.ExternalItem{Kind: "Route", ID: "10.0.0.0/24 via 10.0.0.9"},
			"To keep the item, re-create what makes it desired (for route-gc: a server of the project with the route's next hop as its address). Deleting the Tombstone would delete the item now"},
		{"other", limbov1alpha1.ExternalItem{Kind: "Thing", ID: "42"},
			"To keep the item, re-create what makes it desired. Deleting the Tombstone would delete the item now"},
	} {
		t.Run(tc.plugin, func(t *testing.T) {
			tomb := &limbov1alpha1.Tombstone{ObjectMeta: inLimbo("team-a", "gc-1", "shop", "10m", stampAgo(time.Minute)),
				Spec: limbov1alpha1.TombstoneSpec{Plugin: tc.plugin, Resource: "gc", Item: tc.item}}
			f := newFixture(t, nil, tomb)
			code, out, errOut := f.run("cancel", "-n", "team-a", "tombstones/gc-1")
			if code != 1 || out != "" || !strings.HasSuffix(errOut, tc.want+"\n") {
				t.Errorf("exit %d, stdout %q, stderr\n%s\nwant it to end with\n%s", code, out, errOut, tc.want)
			}
		})
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

// shopDeclaring is Bundle team-a/shop whose spec declares the ConfigMaps named
// declared, and the plugin resources named plugins.
func shopDeclaring(t *testing.T, declared []string, plugins ...string) *limbov1alpha1.Bundle {
	t.Helper()
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: uid("shop")}}
	for _, name := range declared {
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}})
		if err != nil {
			t.Fatal(err)
		}
		b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: name, Object: &runtime.RawExtension{Raw: raw}})
	}
	for _, name := range plugins {
		b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: name, Plugin: &limbov1alpha1.PluginResource{Name: "generator"}})
	}
	return b
}

// shopWithBrokenTemplate is Bundle team-a/shop declaring ConfigMap other, and
// a template whose name is not a string.
func shopWithBrokenTemplate(t *testing.T) *limbov1alpha1.Bundle {
	b := shopDeclaring(t, []string{"other"})
	b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: "broken", Object: &runtime.RawExtension{
		Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":7}}`)}})
	return b
}

// managedBy is the metadata of an object Bundle bundle controls, neither
// stamped nor labelled pending-deletion: delay its limbo.dev/deletionDelay.
func managedBy(name, bundle, delay string) metav1.ObjectMeta {
	m := inLimbo("team-a", name, bundle, delay, "")
	delete(m.Labels, limbov1alpha1.LabelPendingDeletion)
	m.OwnerReferences = []metav1.OwnerReference{bundleOwner(bundle, true)}
	return m
}

// An orphan its Bundle holds (not Ready, or its spec emptied) is neither stamped
// nor labelled, nor is one with a 0s or invalid delay: the Bundle only lists it
// in its status, and deletes it (or starts its countdown) once it may. It is in
// limbo all the same, and cancel keeps it; an object the Bundle still declares
// is not, and cancel refuses it, as it refuses when the Bundle cannot be read.
func TestCancelHeldOrphan(t *testing.T) {
	generated := managedBy("generated", "shop", "")
	generated.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
	listedGenerated := managedBy("listed-generated", "shop", "")
	listedGenerated.Annotations[limbov1alpha1.AnnotationGeneratedBy] = "gen"
	renamed := managedBy("renamed", "shop", "")
	renamed.OwnerReferences[0].UID = uid("the shop before")

	const removedAll = `: deletion cancelled; removed owner reference to Bundle "shop", label limbo.dev/bundle=shop.
No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation limbo.dev/adopt: "true".
`
	const cannotTell = "error: cannot tell whether configmap/%s is in limbo: it has neither the limbo.dev/deletionTimestamp annotation nor the limbo.dev/pending-deletion label, " +
		"and its controller, Bundle team-a/shop, "
	for _, tc := range []struct {
		name    string
		meta    metav1.ObjectMeta
		forbid  bool // reading Bundles is forbidden
		noShop  bool // the Bundle is gone
		torn    bool // the Bundle is being deleted
		cut     bool // the Bundle lists only the soonest of its entries in limbo
		wantOut string
		wantErr string
	}{
		{name: "nodelay", meta: managedBy("nodelay", "shop", ""), wantOut: "configmap/nodelay" + removedAll},
		{name: "zero", meta: managedBy("zero", "shop", "0s"), wantOut: "configmap/zero" + removedAll},
		{name: "invalid", meta: managedBy("invalid", "shop", "soon"), wantOut: "configmap/invalid" + removedAll},
		{name: "listed-generated", meta: listedGenerated, wantOut: "configmap/listed-generated" + removedAll},
		{name: "keep", meta: managedBy("keep", "shop", "24h"),
			wantErr: "error: configmap/keep is not in limbo: its controller, Bundle team-a/shop, still declares it, so there is no deletion to cancel\n"},
		{name: "generated", meta: generated,
			wantErr: `error: configmap/generated is not in limbo: its controller, Bundle team-a/shop, may still generate it (plugin resource "gen", annotation limbo.dev/generatedBy), ` +
				"and does not list it in status.pendingDeletions, so there is no deletion to cancel\n"},
		{name: "generated", meta: generated, cut: true,
			wantErr: fmt.Sprintf(cannotTell, "generated") + `may still generate it (plugin resource "gen", annotation limbo.dev/generatedBy), ` +
				"and lists only the soonest 1 of its 5000 entries in status.pendingDeletions, not this one\n"},
		// Its Bundle being deleted, the teardown deletes it (or releases it,
		// with its delay) when its wave comes, whatever the spec says.
		{name: "keep", meta: managedBy("keep", "shop", "24h"), torn: true, wantOut: "configmap/keep" + removedAll},
		{name: "generated", meta: generated, torn: true, wantOut: "configmap/generated" + removedAll},
		{name: "renamed", meta: renamed,
			wantErr: fmt.Sprintf(cannotTell, "renamed") + "is gone: Bundle team-a/shop is another Bundle now (uid uid-shop, not uid-the shop before)\n"},
		{name: "forbidden", meta: managedBy("forbidden", "shop", ""), forbid: true,
			wantErr: fmt.Sprintf(cannotTell, "forbidden") + `cannot be read to tell whether it still declares it: bundles.limbo.dev "shop" is forbidden: no` + "\n"},
		{name: "gone", meta: managedBy("gone", "shop", ""), noShop: true,
			wantErr: fmt.Sprintf(cannotTell, "gone") + `cannot be read to tell whether it still declares it: bundles.limbo.dev "shop" not found` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shop := shopDeclaring(t, []string{"keep"}, "gen")
			shop.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "listed-generated",
				Message: "waiting for every resource of the Bundle to be Ready"}}
			if tc.cut {
				shop.Status.PendingDeletionCount = 5000
			}
			if tc.torn {
				shop.DeletionTimestamp, shop.Finalizers = &metav1.Time{Time: testNow}, []string{limbov1alpha1.FinalizerTeardown}
			}
			cm := &corev1.ConfigMap{ObjectMeta: tc.meta, Data: map[string]string{"k": "v"}}
			objs := []client.Object{cm}
			if !tc.noShop {
				objs = append(objs, shop)
			}
			var funcs *interceptor.Funcs
			if tc.forbid {
				funcs = &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*limbov1alpha1.Bundle); ok {
						return apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, key.Name, errors.New("no"))
					}
					return c.Get(ctx, key, obj, opts...)
				}}
			}
			f := newFixture(t, funcs, objs...)

			code, out, errOut := f.run("cancel", "-n", "team-a", "configmap/"+tc.name)
			var got corev1.ConfigMap
			if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if code != 1 || out != "" || errOut != tc.wantErr {
					t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, tc.wantErr)
				}
				if got.ResourceVersion != "999" {
					t.Errorf("the object was written: %+v", got.ObjectMeta)
				}
				return
			}
			if code != 0 || out != tc.wantOut || errOut != "" {
				t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, tc.wantOut)
			}
			if len(got.OwnerReferences) != 0 || len(got.Labels) != 0 || got.Data["k"] != "v" {
				t.Errorf("left: owners %v, labels %v, data %v", got.OwnerReferences, got.Labels, got.Data)
			}
			if want := tc.meta.Annotations[limbov1alpha1.AnnotationDeletionDelay]; got.Annotations[limbov1alpha1.AnnotationDeletionDelay] != want {
				t.Errorf("annotations %v, want the delay %q kept", got.Annotations, want)
			}
		})
	}
}

// The Bundle is read again when the object changed between read and patch: the
// controller stamped it in between (the Bundle became Ready), and the stamp is
// removed too.
func TestCancelHeldOrphanStampedMeanwhile(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: managedBy("old", "shop", "1h")}
	funcs, patches := changedBeforeFirstPatch(func(live *corev1.ConfigMap) {
		live.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] = stampAgo(0)
		live.Labels[limbov1alpha1.LabelPendingDeletion] = "true"
	})
	f := newFixture(t, funcs, cm, shopDeclaring(t, []string{"keep"}))
	code, out, errOut := f.run("cancel", "-n", "team-a", "cm/old")
	if want := `configmap/old: deletion cancelled; removed owner reference to Bundle "shop", annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.`; code != 0 || *patches != 2 || !strings.HasPrefix(out, want+"\n") {
		t.Fatalf("exit %d, %d patches, stdout %q, stderr %q; want %q", code, *patches, out, errOut, want)
	}
	var got corev1.ConfigMap
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 || len(got.Labels) != 0 || got.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "" {
		t.Errorf("left: owners %v, labels %v, annotations %v", got.OwnerReferences, got.Labels, got.Annotations)
	}
}

// changedBeforeFirstPatch intercepts the client's patches: before the first goes
// through, change is made to the live ConfigMap (someone writes it between the
// command's read and its patch, which then fails with a Conflict). patches counts
// the patches sent.
func changedBeforeFirstPatch(change func(live *corev1.ConfigMap)) (*interceptor.Funcs, *int) {
	patches := 0
	return &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		patches++
		if patches == 1 {
			var live corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &live); err != nil {
				return err
			}
			change(&live)
			if err := c.Update(ctx, &live); err != nil {
				return err
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}, &patches
}

// recordPatches intercepts the client's patches, recording each one's body, and,
// with forbidBundles, refuses every read of a Bundle.
func recordPatches(forbidBundles bool) (*interceptor.Funcs, *[]string) {
	var patches []string
	return &interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			patches = append(patches, string(data))
			return c.Patch(ctx, obj, patch, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*limbov1alpha1.Bundle); ok && forbidBundles {
				return apierrors.NewForbidden(schema.GroupResource{Group: "limbo.dev", Resource: "bundles"}, key.Name, errors.New("no"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}, &patches
}

// A Bundle that declares an object in limbo again (re-added to its spec: its pass
// has not cancelled the deletion yet, or a spec error elsewhere stalls it) keeps
// it: cancel removes the limbo marks only, as the engine's own cancel does, and
// keeps the controller owner reference and the limbo.dev/bundle label. A released
// object (no controller, or a stale one) that the Bundle of its label's name
// declares keeps its label, by which that Bundle adopts it. Taking either from
// its Bundle would leave the Bundle reporting it NotOwned. A Bundle being deleted
// keeps nothing; one that cannot be read fails the cancel.
func TestCancelKeptByTheBundleThatDeclaresIt(t *testing.T) {
	const outOfLimbo = `{"metadata":{"annotations":{"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/pending-deletion":null},`
	otherOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "anchor", UID: uid("anchor")}
	controlled := func() metav1.ObjectMeta {
		m := inLimbo("team-a", "keep", "shop", "24h", stampAgo(time.Hour))
		m.OwnerReferences = []metav1.OwnerReference{otherOwner, bundleOwner("shop", true)}
		return m
	}
	released := func() metav1.ObjectMeta {
		m := inLimbo("team-a", "keep", "shop", "24h", stampAgo(time.Hour))
		m = releasedBy(m, stampAgo(time.Hour))
		return m
	}
	staleController := controlled()
	staleController.OwnerReferences[1].UID = uid("the shop before")
	deleting := shopDeclaring(t, []string{"keep"})
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	deleting.Finalizers = []string{limbov1alpha1.FinalizerTeardown}

	for _, tc := range []struct {
		name       string
		meta       metav1.ObjectMeta
		bundle     *limbov1alpha1.Bundle
		forbid     bool
		wantOut    string
		wantErr    string
		wantPatch  string
		wantOwners []metav1.OwnerReference
		wantLabels map[string]string
	}{
		{name: "controller declares it again", meta: controlled(), bundle: shopDeclaring(t, []string{"keep"}),
			wantOut: "configmap/keep: deletion cancelled; removed annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true.\n" +
				"Bundle team-a/shop declares it again and keeps managing it: its owner reference and the label limbo.dev/bundle=shop are kept.\n",
			wantPatch:  outOfLimbo + `"resourceVersion":"999"}}`,
			wantOwners: []metav1.OwnerReference{otherOwner, bundleOwner("shop", true)},
			wantLabels: map[string]string{limbov1alpha1.LabelBundle: "shop"}},
		// The Bundle of its label's name adopts it, which ends the countdown; the
		// reaper holds it until then. Cancelled, it would be declared, labelled,
		// without controller or limbo mark: what a --cascade=orphan delete leaves,
		// and a later delete of that Bundle would be taken for one.
		{name: "released, declared by the Bundle of its label's name", meta: released(), bundle: shopDeclaring(t, []string{"keep"}),
			wantErr: "error: cannot cancel configmap/keep: Bundle team-a/shop, which its label limbo.dev/bundle names, declares it: its next pass adopts it, which ends the countdown, and until then it is not deleted (kubectl limbo pending shows why it waits); to keep it out of that Bundle instead, remove it from the Bundle's spec and cancel again\n"},
		{name: "stale controller, declared by the Bundle of its name now", meta: staleController, bundle: shopDeclaring(t, []string{"keep"}),
			wantErr: "error: cannot cancel configmap/keep: Bundle team-a/shop, which its label limbo.dev/bundle names, declares it: its next pass adopts it, which ends the countdown, and until then it is not deleted (kubectl limbo pending shows why it waits); to keep it out of that Bundle instead, remove it from the Bundle's spec and cancel again\n"},
		// A template that cannot be read might be this object: whether the Bundle
		// keeps it cannot be told (bundlespec.Declares counts it as declared, the
		// safe reading for deleting, the wrong one for keeping).
		{name: "controller with a template that cannot be read", meta: controlled(), bundle: shopWithBrokenTemplate(t),
			wantErr: "error: cannot cancel configmap/keep: whether its controller, Bundle team-a/shop, declares it again cannot be told: " +
				`the template of resource "broken" cannot be read: json: cannot unmarshal number into Go struct field .metadata.name of type string; fix the Bundle's spec first` + "\n"},
		{name: "released, the Bundle of its label's name with a template that cannot be read", meta: released(), bundle: shopWithBrokenTemplate(t),
			wantErr: "error: cannot cancel configmap/keep: whether Bundle team-a/shop, which its label limbo.dev/bundle names, declares it again cannot be told: " +
				`the template of resource "broken" cannot be read: json: cannot unmarshal number into Go struct field .metadata.name of type string; fix the Bundle's spec first` + "\n"},
		{name: "controller declares it but is being deleted", meta: controlled(), bundle: deleting,
			wantOut: `configmap/keep: deletion cancelled; removed owner reference to Bundle "shop", annotation limbo.dev/deletionTimestamp, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.` + "\n" +
				`No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation limbo.dev/adopt: "true".` + "\n",
			wantPatch: `{"metadata":{"annotations":{"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/bundle":null,"limbo.dev/pending-deletion":null},` +
				`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"anchor","uid":"uid-anchor"}],"resourceVersion":"999"}}`,
			wantOwners: []metav1.OwnerReference{otherOwner}},
		{name: "released, its Bundle being deleted", meta: released(), bundle: deleting,
			wantOut: "configmap/keep: deletion cancelled; removed annotation limbo.dev/deletionTimestamp, annotation limbo.dev/released, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.\n" +
				`No Bundle manages it now; to bring it back under a Bundle, declare it there with the annotation limbo.dev/adopt: "true".` + "\n",
			wantPatch: `{"metadata":{"annotations":{"limbo.dev/deletionTimestamp":null,"limbo.dev/expeditedFrom":null,"limbo.dev/pluginResource":null,"limbo.dev/released":null},"labels":{"limbo.dev/bundle":null,"limbo.dev/pending-deletion":null},"resourceVersion":"999"}}`},
		{name: "controller cannot be read", meta: controlled(), bundle: shopDeclaring(t, []string{"keep"}), forbid: true,
			wantErr: "error: cannot cancel configmap/keep: its controller, Bundle team-a/shop, cannot be read to tell whether it declares it again: " +
				`bundles.limbo.dev "shop" is forbidden: no` + "\n"},
		{name: "released, its Bundle cannot be read", meta: released(), bundle: shopDeclaring(t, []string{"keep"}), forbid: true,
			wantErr: "error: cannot cancel configmap/keep: Bundle team-a/shop, which its label limbo.dev/bundle names, cannot be read to tell whether it declares it again: " +
				`bundles.limbo.dev "shop" is forbidden: no` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			funcs, patches := recordPatches(tc.forbid)
			cm := &corev1.ConfigMap{ObjectMeta: tc.meta}
			f := newFixture(t, funcs, cm, tc.bundle, anchor())
			code, out, errOut := f.run("cancel", "-n", "team-a", "configmap/keep")
			var got corev1.ConfigMap
			if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(cm), &got); err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if code != 1 || out != "" || errOut != tc.wantErr || len(*patches) != 0 {
					t.Errorf("exit %d, stdout %q, patches %q, stderr\n%s\nwant\n%s", code, out, *patches, errOut, tc.wantErr)
				}
				return
			}
			if code != 0 || out != tc.wantOut || errOut != "" {
				t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, tc.wantOut)
			}
			if want := []string{tc.wantPatch}; !reflect.DeepEqual(*patches, want) {
				t.Errorf("patches\n%q\nwant\n%q", *patches, want)
			}
			if !reflect.DeepEqual(got.OwnerReferences, tc.wantOwners) {
				t.Errorf("owner references %+v, want %+v", got.OwnerReferences, tc.wantOwners)
			}
			if !reflect.DeepEqual(got.Labels, tc.wantLabels) {
				t.Errorf("labels %v, want %v", got.Labels, tc.wantLabels)
			}
			if want := map[string]string{limbov1alpha1.AnnotationDeletionDelay: "24h"}; !reflect.DeepEqual(got.Annotations, want) {
				t.Errorf("annotations %v, want %v", got.Annotations, want)
			}
		})
	}
}

// An object already being deleted (its deletionTimestamp set, held by a
// finalizer, as a PVC in use is) is deleted whatever cancel writes: cancel
// refuses it, writing nothing, rather than report a cancel the API server ignores
// and strip the labels that keep it listed.
func TestCancelBeingDeleted(t *testing.T) {
	deleted := metav1.NewTime(testNow.Add(-time.Minute))
	for _, tc := range []struct {
		name, ref string
		meta      metav1.ObjectMeta
		wantErr   string
	}{
		{name: "held by finalizers", ref: "cm/data", meta: func() metav1.ObjectMeta {
			m := inLimbo("team-a", "data", "shop", "1h", stampAgo(2*time.Hour))
			m.OwnerReferences = []metav1.OwnerReference{bundleOwner("shop", true)}
			m.Finalizers = []string{"example.com/in-use", "example.com/backup"}
			m.DeletionTimestamp = &deleted
			return m
		}(), wantErr: "error: cannot cancel configmap/data: it is already being deleted (since 2026-03-01T11:59:00Z); " +
			"held by finalizers: example.com/in-use, example.com/backup; cancel cannot stop it: the API server deletes it once its finalizers are removed\n"},
		{name: "released", ref: "cm/released", meta: func() metav1.ObjectMeta {
			m := inLimbo("team-a", "released", "shop", "1h", stampAgo(2*time.Hour))
			m = releasedBy(m, stampAgo(2*time.Hour))
			m.Finalizers = []string{"example.com/in-use"}
			m.DeletionTimestamp = &deleted
			return m
		}(), wantErr: "error: cannot cancel configmap/released: it is already being deleted (since 2026-03-01T11:59:00Z); " +
			"held by finalizers: example.com/in-use; cancel cannot stop it: the API server deletes it once its finalizers are removed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			funcs, patches := recordPatches(false)
			f := newFixture(t, funcs, &corev1.ConfigMap{ObjectMeta: tc.meta}, shopDeclaring(t, nil))
			code, out, errOut := f.run("cancel", "-n", "team-a", tc.ref)
			if code != 1 || out != "" || errOut != tc.wantErr || len(*patches) != 0 {
				t.Errorf("exit %d, stdout %q, patches %q, stderr\n%s\nwant\n%s", code, out, *patches, errOut, tc.wantErr)
			}
		})
	}
}

// rewrittenFor makes someone else write each ConfigMap patched (its data, not
// limbo's marks) before every patch during busy after the first one: each such
// patch meets a Conflict, as on an object its own controller keeps rewriting.
func rewrittenFor(busy time.Duration) *interceptor.Funcs {
	var first time.Time
	return &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if first.IsZero() {
			first = time.Now()
		}
		if time.Since(first) < busy {
			var live corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &live); err != nil {
				return err
			}
			live.Data = map[string]string{"tick": time.Now().String()}
			if err := c.Update(ctx, &live); err != nil {
				return err
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
}

// An object rewritten by others for a while (a csi-baremetal Volume) is still
// expedited and cancelled: the retries after a Conflict outlast a busy spell
// of 300 ms, which retry.DefaultRetry (about 50 ms) did not.
func TestConflictRetriesOutlastABusyObject(t *testing.T) {
	for _, verb := range []string{"expedite", "cancel"} {
		t.Run(verb, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: inLimbo("team-a", "busy", "shop", "24h", stampAgo(time.Hour))}
			f := newFixture(t, rewrittenFor(300*time.Millisecond), cm)
			if code, out, errOut := f.run(verb, "-n", "team-a", "configmap/busy"); code != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// A released object that another Bundle declares to adopt is taken over by that
// Bundle's next pass: cancel says so, where it said that no Bundle manages it.
func TestCancelOfAnObjectAnotherBundleAdopts(t *testing.T) {
	m := inLimbo("team-a", "keep", "shop", "24h", stampAgo(time.Hour))
	m = releasedBy(m, stampAgo(time.Hour))
	f := newFixture(t, nil, &corev1.ConfigMap{ObjectMeta: m}, adoptingBundle(t, "next", "keep"))
	code, out, errOut := f.run("cancel", "-n", "team-a", "configmap/keep")
	want := "configmap/keep: deletion cancelled; removed annotation limbo.dev/deletionTimestamp, annotation limbo.dev/released, label limbo.dev/pending-deletion=true, label limbo.dev/bundle=shop.\n" +
		"Bundle team-a/next declares it to adopt it (limbo.dev/adopt): its next pass adopts it and applies its template over it; to keep the object as it is, remove it from that Bundle's spec.\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}
