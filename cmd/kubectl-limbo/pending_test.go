package main

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
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
				Message: `invalid limbo.dev/deletionDelay "forever": time: invalid duration "forever"`},
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
	}
}

func TestPendingTableNamespace(t *testing.T) {
	f := newFixture(t, nil, pendingObjects()...)
	code, out, errOut := f.run("pending", "-n", "team-a")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `KIND         NAME                 BUNDLE   DELETE-AFTER           TIME-LEFT   MESSAGE
Secret       nodelay              <none>   <none>                 due         no limbo.dev/deletionDelay: deleted without delay
Deployment.apps   app             shop     2026-03-01T11:10:00Z   due
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}
