package it

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// readExampleBundle reads one Bundle from examples/soft-delete.
func readExampleBundle(t testing.TB, file string) *limbov1alpha1.Bundle {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "examples", "soft-delete", file))
	if err != nil {
		t.Fatal(err)
	}
	b := &limbov1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict(data, b); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if b.APIVersion != limbov1alpha1.GroupVersion.String() || b.Kind != "Bundle" || b.Namespace != "" {
		t.Fatalf("%s: %s %s in namespace %q, want a Bundle without namespace", file, b.APIVersion, b.Kind, b.Namespace)
	}
	return b
}

// The walk-through of examples/soft-delete/README.md: v1 goes Ready; v2 puts
// db-config and legacy-flags in limbo with their delays; v1 again cancels both;
// v2 again, then `kubectl delete` of legacy-flags deletes it at once.
func TestSoftDeleteExample(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	v1, v2 := readExampleBundle(t, "bundle-v1.yaml"), readExampleBundle(t, "bundle-v2.yaml")
	if v1.Name != v2.Name {
		t.Fatalf("bundle-v1.yaml names %q, bundle-v2.yaml %q", v1.Name, v2.Name)
	}
	b := createBundle(t, ns, v1.Name, v1.Spec.Resources...)
	b = waitReady(t, b)
	if got := stringField(getObject(t, configMapGVK, ns, "app-settings"), "data", "DB_HOST"); got != "db.internal" {
		t.Errorf("app-settings DB_HOST = %q", got)
	}
	uids := map[string]string{}
	for _, name := range []string{"db-config", "legacy-flags", "app-settings"} {
		uids[name] = string(getObject(t, configMapGVK, ns, name).GetUID())
	}

	// Schedule.
	updateBundle(t, b, v2.Spec.Resources...)
	_, dbStamp := waitInLimbo(t, configMapGVK, ns, "db-config")
	_, legacyStamp := waitInLimbo(t, configMapGVK, ns, "legacy-flags")
	cur := waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if cur.Status.PendingDeletionCount != 2 {
			return fmt.Errorf("pendingDeletions = %+v, want db-config and legacy-flags", cur.Status.PendingDeletions)
		}
		return conditionIs(cur, "Ready", metav1.ConditionTrue, "")
	})
	if pd := cur.Status.PendingDeletions; pd[0].Name != "db-config" || !pd[0].DeleteAfter.Time.Equal(dbStamp.Add(2*time.Minute)) ||
		pd[1].Name != "legacy-flags" || !pd[1].DeleteAfter.Time.Equal(legacyStamp.Add(24*time.Hour)) {
		t.Errorf("pendingDeletions = %+v, want db-config after 2m, then legacy-flags after 24h", pd)
	}
	if cur.Status.NextDeletion == nil || !cur.Status.NextDeletion.Time.Equal(dbStamp.Add(2*time.Minute)) {
		t.Errorf("nextDeletion = %v, want %s", cur.Status.NextDeletion, dbStamp.Add(2*time.Minute))
	}
	waitEventContaining(t, b, corev1.EventTypeNormal, "DeletionScheduled", "ConfigMap "+ns+"/db-config is in limbo for 2m0s")

	// Cancel by re-adding.
	updateBundle(t, b, v1.Spec.Resources...)
	for _, name := range []string{"db-config", "legacy-flags"} {
		waitObject(t, configMapGVK, ns, name, notInLimbo)
		waitEvent(t, b, corev1.EventTypeNormal, "DeletionCancelled", fmt.Sprintf("ConfigMap %s/%s is desired again: deletion cancelled", ns, name))
	}
	noPendingDeletions(t, b)

	// Force.
	updateBundle(t, b, v2.Spec.Resources...)
	legacy, _ := waitInLimbo(t, configMapGVK, ns, "legacy-flags")
	if err := env.Client.Delete(testenv.Context(t, testenv.DefaultTimeout), legacy, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, configMapGVK, ns, "legacy-flags")
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if len(cur.Status.PendingDeletions) != 1 || cur.Status.PendingDeletions[0].Name != "db-config" {
			return fmt.Errorf("pendingDeletions = %+v, want db-config only", cur.Status.PendingDeletions)
		}
		return nil
	})
	for _, name := range []string{"db-config", "app-settings"} {
		if err := existsWithUID(t, configMapGVK, ns, name, uids[name])(); err != nil {
			t.Error(err)
		}
	}
}
