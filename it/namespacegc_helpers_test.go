package it

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The namespace-gc tests: each runs in an nsgcFixture, its own namespace (Bundle,
// credentials Secret, Tombstones) with its own StorageOS simulator. Kubernetes
// Namespaces are cluster-wide and every test creates some, so each test's names
// are unique; the simulator holds only the test's own backend namespaces (and
// "default"), so other tests' Namespaces never matter, and the tests run in
// parallel.

const (
	nsgcResource = "storage-ns-gc"
	nsgcSecret   = "storageos-api"
)

// nsgcFixture is one namespace-gc test's world: its namespace, which holds the
// Bundle, the credentials Secret and the Tombstones, and its StorageOS simulator.
type nsgcFixture struct {
	ns  string
	sim *storageossim.Server
	url string
	// tombstones are the Tombstones the namespace has held.
	tombstones *tombstoneLog
}

// newNSGCFixture makes a namespace, starts a simulator (stopped when t ends) and
// writes the plugin's credentials Secret.
func newNSGCFixture(t testing.TB) *nsgcFixture {
	t.Helper()
	f := &nsgcFixture{ns: env.Namespace(t)}
	f.tombstones = watchTombstones(t, f.ns)
	f.sim, f.url = startStorageOS(t)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nsgcSecret, Namespace: f.ns},
		StringData: map[string]string{"username": "storageos", "password": "storageos"},
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("create Secret: %v", err)
	}
	return f
}

// startStorageOS starts a simulator on a free local port, stopped when t ends.
func startStorageOS(t testing.TB) (*storageossim.Server, string) {
	t.Helper()
	sim := storageossim.New(storageossim.Config{Username: "storageos", Password: "storageos"})
	url, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop StorageOS simulator: %v", err)
		}
	})
	return sim, url
}

// resource is a namespace-gc resource against the fixture's simulator; extra are
// further spec fields as JSON ("gcInterval":"0s", ...).
func (f *nsgcFixture) resource(deletionDelay string, extra ...string) limbov1alpha1.Resource {
	fields := append([]string{fmt.Sprintf(`"storageos":{"endpoint":%q,"credentialsSecretRef":{"name":%q}}`, f.url, nsgcSecret)}, extra...)
	return limbov1alpha1.Resource{Name: nsgcResource, Plugin: &limbov1alpha1.PluginResource{
		Name: namespacegc.Name, DeletionDelay: deletionDelay,
		Spec: &apiextensionsv1.JSON{Raw: []byte("{" + strings.Join(fields, ",") + "}")},
	}}
}

// bundle creates the Bundle "storage" with the one namespace-gc resource.
func (f *nsgcFixture) bundle(t testing.TB, deletionDelay string, extra ...string) *limbov1alpha1.Bundle {
	t.Helper()
	return createBundle(t, f.ns, "storage", f.resource(deletionDelay, extra...))
}

// deletionOnlyBundle creates the Bundle with deletionOnly and waits until it is
// Ready, its first GC run having judged every backend namespace and found no
// orphan: later orphans come from deletions.
func (f *nsgcFixture) deletionOnlyBundle(t testing.TB, deletionDelay string) *limbov1alpha1.Bundle {
	t.Helper()
	b := f.bundle(t, deletionDelay, deletionOnly...)
	waitNSGCReady(t, b, len(f.sim.Namespaces()))
	return b
}

// appNamespace creates a Kubernetes Namespace (see createK8sNamespace) and its
// backend namespace, which holds volumes volumes.
func (f *nsgcFixture) appNamespace(t testing.TB, prefix string, volumes int) string {
	t.Helper()
	name := createK8sNamespace(t, prefix)
	f.sim.AddNamespace(name)
	if volumes > 0 {
		if err := f.sim.SetVolumes(name, volumes); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// deletedApp is the start of most namespace-gc tests: a Kubernetes Namespace
// with its backend namespace (holding volumes volumes), a deletionOnlyBundle
// that has seen it, and the Namespace deleted. It returns the Namespace's name,
// the Bundle and the backend namespace's Tombstone.
func (f *nsgcFixture) deletedApp(t testing.TB, prefix string, volumes int, deletionDelay string) (string, *limbov1alpha1.Bundle, *limbov1alpha1.Tombstone) {
	t.Helper()
	app := f.appNamespace(t, prefix, volumes)
	b := f.deletionOnlyBundle(t, deletionDelay)
	return app, b, f.orphan(t, app, deletionDelay)
}

// strayNamespace adds a backend namespace that no Kubernetes Namespace has.
func (f *nsgcFixture) strayNamespace(prefix string) string {
	name := uniqueName(prefix)
	f.sim.AddNamespace(name)
	return name
}

// orphan deletes the Kubernetes Namespace app and waits for the Tombstone of its
// backend namespace, stamped with deletionDelay.
func (f *nsgcFixture) orphan(t testing.TB, app, deletionDelay string) *limbov1alpha1.Tombstone {
	t.Helper()
	deleteK8sNamespace(t, app)
	return f.waitTombstone(t, app, deletionDelay)
}

// deletionOnly: a GC run at the first plan, then none for an hour. The first run
// judges every backend namespace, so a message "N StorageOS namespaces, 0
// orphaned" proves the plugin saw the Kubernetes Namespace of each of them; later
// orphans can only come from deletions.
var deletionOnly = []string{`"gcInterval":"1h"`, `"gcDelay":"0s"`}

// createK8sNamespace creates a Kubernetes Namespace with a unique name and
// deletes it when t ends.
func createK8sNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create Namespace: %v", err)
	}
	t.Cleanup(func() { deleteK8sNamespace(t, ns.Name) })
	return ns.Name
}

// deleteK8sNamespace starts a Namespace's deletion; the namespace controller of
// the local control plane empties and removes it.
func deleteK8sNamespace(t testing.TB, name string) {
	t.Helper()
	err := env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete Namespace %s: %v", name, err)
	}
}

// waitK8sNamespaceGone waits for the namespace controller to finish.
func waitK8sNamespaceGone(t testing.TB, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Namespace{})
		switch {
		case err == nil:
			return fmt.Errorf("Namespace %s still exists", name)
		case apierrors.IsNotFound(err):
			return nil
		}
		return err
	})
}

// recreateK8sNamespace waits until the Namespace name is gone, then creates it
// again (createK8sNamespace's cleanup deletes it when t ends).
func recreateK8sNamespace(t testing.TB, name string) {
	t.Helper()
	waitK8sNamespaceGone(t, name)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("re-create Namespace %s: %v", name, err)
	}
}

// uniqueName is a backend namespace name no Kubernetes Namespace has.
func uniqueName(prefix string) string { return prefix + utilrand.String(8) }

// backendHas reports whether the simulator holds the namespace.
func (f *nsgcFixture) backendHas(name string) bool {
	_, ok := f.sim.Namespace(name)
	return ok
}

// deletes counts the simulator's DELETE calls.
func (f *nsgcFixture) deletes() int { return f.sim.Calls(storageossim.OpDeleteNamespace) }

// waitNSGCReady waits until the Bundle is Ready and the plugin resource reports
// backend namespaces, none of them orphaned.
func waitNSGCReady(t testing.TB, b *limbov1alpha1.Bundle, backend int) *limbov1alpha1.Bundle {
	t.Helper()
	message := fmt.Sprintf("%d StorageOS namespaces, 0 orphaned", backend)
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, nsgcResource, limbov1alpha1.ResourceReady, "", message); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
}

// tombstone returns the Tombstone of the backend namespace called name, or nil.
func (f *nsgcFixture) tombstone(t testing.TB, name string) *limbov1alpha1.Tombstone {
	t.Helper()
	for _, ts := range tombstones(t, f.ns) {
		if own, _ := plugin.SplitItemName(ts.Spec.Item.Name); own == name {
			return &ts
		}
	}
	return nil
}

// waitTombstone waits until a Tombstone for the backend namespace name has been
// made (it may be gone already, with a short delay) and checks that it stands for
// that namespace.
func (f *nsgcFixture) waitTombstone(t testing.TB, name, delay string) *limbov1alpha1.Tombstone {
	t.Helper()
	ts := f.tombstones.wait(t, "backend namespace "+name, func(item limbov1alpha1.ExternalItem) bool {
		own, _ := plugin.SplitItemName(item.Name)
		return own == name
	},
		func() string { return fmt.Sprintf("tombstones: %v; %s", tombstoneItems(t, f.ns), f.diagnosis(name)) })
	want, ok := f.sim.Namespace(name)
	if !ok {
		// Possible only with a short delay: the item went already.
		return &ts
	}
	if ts.Spec.Plugin != namespacegc.Name || ts.Spec.Resource != nsgcResource ||
		ts.Spec.Item != (limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: want.ID, Name: namespacegc.ItemName(name, f.url)}) ||
		ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] != delay {
		t.Errorf("Tombstone = spec %+v, annotations %v; want plugin %s, resource %s, item {%s %s %s}, delay %s",
			ts.Spec, ts.Annotations, namespacegc.Name, nsgcResource, namespacegc.ItemKind, want.ID, name, delay)
	}
	return &ts
}

// waitTombstoneGone waits until the backend namespace name has no Tombstone.
func (f *nsgcFixture) waitTombstoneGone(t testing.TB, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts := f.tombstone(t, name); ts != nil {
			return fmt.Errorf("Tombstone %s still there: %v", ts.Name, tombstoneItems(t, f.ns))
		}
		return nil
	})
}

// waitBackendGone waits until the backend namespace and its Tombstone are gone.
func (f *nsgcFixture) waitBackendGone(t testing.TB, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if f.backendHas(name) {
			return lazyError(func() string {
				return fmt.Sprintf("backend namespace %s still exists; tombstones: %v; %s", name, tombstoneItems(t, f.ns), f.diagnosis(name))
			})
		}
		if ts := f.tombstone(t, name); ts != nil {
			return fmt.Errorf("the Tombstone of %s is still there: %+v", name, ts.Status)
		}
		return nil
	})
}

// diagnosis is what a failed wait reports beside the Tombstones: whether the
// backend still holds the namespace name, the deletes the simulator served, the
// plugin resource's status and the events in the test's namespace (the Bundle's
// and the Tombstones': a Tombstone that came and went between two polls, a plan
// that failed, a cancel).
func (f *nsgcFixture) diagnosis(name string) string {
	ctx := context.Background()
	resource := "no Bundle"
	var b limbov1alpha1.Bundle
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "storage"}, &b); err == nil {
		resource = "no status"
		if st := resourceStatus(&b, nsgcResource); st != nil {
			resource = fmt.Sprintf("%s %s %q", st.State, st.Reason, st.Message)
		}
	}
	var evs []string
	var list corev1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(f.ns)); err == nil {
		for _, e := range list.Items {
			evs = append(evs, fmt.Sprintf("%s %s/%s: %s", e.LastTimestamp.UTC().Format("15:04:05"), e.InvolvedObject.Kind, e.Reason, e.Message))
		}
	}
	return fmt.Sprintf("backend has %s: %v; StorageOS deletes: %d; resource %s: %s; events: %v",
		name, f.backendHas(name), f.deletes(), nsgcResource, resource, evs)
}
