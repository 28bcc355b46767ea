package it

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// examples/deorbit works as its README says: with workload.yaml in the second
// cluster, the Bundle is armed with the claim of cinder's volume and the
// LoadBalancer Service; deleting it removes both (the hand-made volume's claim and
// the ClusterIP Service stay), then the Bundle's ConfigMap, then the Bundle. The
// delays are cut short.
func TestDeorbitExample(t *testing.T) {
	dir := filepath.Join(env.RepoRoot, "examples", "deorbit")
	ns := env.Namespace(t)
	remote := env.SecondCluster(t, ns)
	w := &workload{t: t, ns: "shop", remote: remote, c: remote.Client} // the example's namespace there
	t.Cleanup(w.cleanup)
	for _, u := range readManifests(t, filepath.Join(dir, "workload.yaml")) {
		if err := w.c.Create(context.Background(), u); err != nil {
			t.Fatalf("create %s %s in the second cluster: %v", u.GetKind(), u.GetName(), err)
		}
	}
	b := readBundleFile(t, filepath.Join(dir, "bundle.yaml"))
	b.Namespace = ns // with the kubeconfig Secret SecondCluster made
	b.Spec.Resources[0].Plugin.DeletionDelay = "0s"
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitArmed(t, b, "armed: 1 PVC, 1 LoadBalancer Service, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)")
	waitObject(t, configMapGVK, ns, "workload-cluster-info", func(*unstructured.Unstructured) error { return nil })

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}}
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "ingress"}}
	w.waitGone(claim)
	w.waitGone(lb)
	if getObject(t, configMapGVK, ns, "workload-cluster-info") == nil {
		t.Fatal("the Bundle's ConfigMap went before deorbit was done")
	}
	w.playProvisioner(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "shop-data"}})
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 1 PVCs, 1 LoadBalancer Services")
	waitBundleGone(t, b)
	for _, o := range []client.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "archive"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "backend"}},
	} {
		if !w.get(o) || o.GetDeletionTimestamp() != nil {
			t.Errorf("%s was deleted", o.GetName())
		}
	}
}
