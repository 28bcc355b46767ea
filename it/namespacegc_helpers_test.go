package it

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/namespacegc"
	"github.com/limbo-dev/limbo/pkg/storageos/storageossim"
)

// The namespace-gc tests: each starts its own StorageOS simulator, writes the
// credentials Secret in its namespace and runs a Bundle with one namespace-gc
// resource. Kubernetes Namespaces are cluster-wide and every test creates some,
// so each test's names are unique; the simulator holds only the test's own
// backend namespaces (and "default"), so other tests' Namespaces never matter.

const (
	nsgcResource = "storage-ns-gc"
	nsgcSecret   = "storageos-api"
)

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

// createStorageOSSecret writes the plugin's credentials Secret in ns.
func createStorageOSSecret(t testing.TB, ns string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nsgcSecret, Namespace: ns},
		StringData: map[string]string{"username": "storageos", "password": "storageos"},
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("create Secret: %v", err)
	}
}

// nsgcResourceFor is a namespace-gc resource against the simulator at url; extra
// are further spec fields as JSON ("gcInterval":"0s", ...).
func nsgcResourceFor(url, deletionDelay string, extra ...string) limbov1alpha1.Resource {
	fields := append([]string{fmt.Sprintf(`"storageos":{"endpoint":%q,"credentialsSecretRef":{"name":%q}}`, url, nsgcSecret)}, extra...)
	return limbov1alpha1.Resource{Name: nsgcResource, Plugin: &limbov1alpha1.PluginResource{
		Name: namespacegc.Name, DeletionDelay: deletionDelay,
		Spec: &apiextensionsv1.JSON{Raw: []byte("{" + strings.Join(fields, ",") + "}")},
	}}
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

// uniqueName is a backend namespace name no Kubernetes Namespace has.
func uniqueName(prefix string) string { return prefix + utilrand.String(8) }

// backendHas reports whether the simulator holds the namespace.
func backendHas(sim *storageossim.Server, name string) bool {
	_, ok := sim.Namespace(name)
	return ok
}

// waitNSGCReady waits until the Bundle is Ready and the plugin resource reports
// message.
func waitNSGCReady(t testing.TB, b *limbov1alpha1.Bundle, message string) *limbov1alpha1.Bundle {
	t.Helper()
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := resourceMessageIs(cur, nsgcResource, limbov1alpha1.ResourceReady, "", message); err != nil {
			return err
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
}

// tombstoneFor returns the Tombstone of the backend namespace called name, or nil.
func tombstoneFor(t testing.TB, ns, name string) *limbov1alpha1.Tombstone {
	t.Helper()
	for _, ts := range tombstones(t, ns) {
		if ts.Spec.Item.Name == name {
			return &ts
		}
	}
	return nil
}

// waitTombstoneFor waits for the Tombstone of the backend namespace name and
// checks that it stands for that namespace.
func waitTombstoneFor(t testing.TB, sim *storageossim.Server, ns, name, delay string) *limbov1alpha1.Tombstone {
	t.Helper()
	var ts *limbov1alpha1.Tombstone
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if ts = tombstoneFor(t, ns, name); ts == nil {
			return fmt.Errorf("no Tombstone for backend namespace %s; tombstones: %v", name, tombstoneItems(t, ns))
		}
		return nil
	})
	want, ok := sim.Namespace(name)
	if !ok {
		// Possible only with a short delay: the item went already.
		return ts
	}
	if ts.Spec.Plugin != namespacegc.Name || ts.Spec.Resource != nsgcResource ||
		ts.Spec.Item != (limbov1alpha1.ExternalItem{Kind: namespacegc.ItemKind, ID: want.ID, Name: name}) ||
		ts.Annotations[limbov1alpha1.AnnotationDeletionDelay] != delay {
		t.Errorf("Tombstone = spec %+v, annotations %v; want plugin %s, resource %s, item {%s %s %s}, delay %s",
			ts.Spec, ts.Annotations, namespacegc.Name, nsgcResource, namespacegc.ItemKind, want.ID, name, delay)
	}
	return ts
}

// waitBackendGone waits until the backend namespace and its Tombstone are gone.
func waitBackendGone(t testing.TB, sim *storageossim.Server, ns, name string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if backendHas(sim, name) {
			return fmt.Errorf("backend namespace %s still exists; tombstones: %v", name, tombstoneItems(t, ns))
		}
		if ts := tombstoneFor(t, ns, name); ts != nil {
			return fmt.Errorf("the Tombstone of %s is still there: %+v", name, ts.Status)
		}
		return nil
	})
}

// tombstoneItems describes a namespace's Tombstones for error messages.
func tombstoneItems(t testing.TB, ns string) []string {
	var out []string
	for _, ts := range tombstones(t, ns) {
		out = append(out, fmt.Sprintf("%s(%s attempts=%d lastError=%q deleting=%v)", ts.Name, ts.Spec.Item.Name, ts.Status.Attempts, ts.Status.LastError, !ts.DeletionTimestamp.IsZero()))
	}
	return out
}

// waitNSGCEvent waits for an event on the Bundle with the type and reason whose
// message contains part.
func waitNSGCEvent(t testing.TB, b *limbov1alpha1.Bundle, typ, reason, part string) {
	t.Helper()
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		var seen []string
		for _, e := range events(t, b) {
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, part) {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s/%s: %s", e.Type, e.Reason, e.Message))
		}
		return fmt.Errorf("no %s event %s containing %q; events: %q", typ, reason, part, seen)
	})
}

// kubectlNSGC runs bin/kubectl against the test cluster.
func kubectlNSGC(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"--kubeconfig", env.Cluster.KubeconfigPath}, args...)
	out, err := exec.CommandContext(ctx, filepath.Join(env.RepoRoot, "bin", "kubectl"), args...).CombinedOutput()
	return string(out), err
}
