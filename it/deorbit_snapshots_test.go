package it

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	"github.com/limbo-dev/limbo/pkg/localcluster"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// With the VolumeSnapshot CRD installed in the target, deorbit counts the
// VolumeSnapshots in its armed report and deletes them at teardown.
func TestDeorbitVolumeSnapshots(t *testing.T) {
	ns := env.Namespace(t)
	w := newWorkload(t, ns)
	ctx := testenv.Context(t, testenv.DefaultTimeout)
	if err := localcluster.InstallCRDs(ctx, w.remote.Cluster.RESTConfig(), filepath.Join(env.RepoRoot, "it", "testdata", "workload-crds", "volumesnapshots.yaml")); err != nil {
		t.Fatalf("install the VolumeSnapshot CRD in the second cluster: %v", err)
	}
	t.Cleanup(func() { removeWorkloadCRD(t, w, "volumesnapshots.snapshot.storage.k8s.io") })
	snaps := []client.Object{volumeSnapshot(ns, "nightly"), volumeSnapshot(ns, "weekly")}
	for _, s := range snaps {
		if err := w.c.Create(ctx, s); err != nil {
			t.Fatalf("create VolumeSnapshot: %v", err)
		}
	}
	b := deorbitBundle(t, ns, "0s", nil)
	waitArmed(t, b, "armed: 0 PVCs, 0 LoadBalancer Services, 2 VolumeSnapshots")

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	for _, s := range snaps {
		w.waitGone(s)
	}
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDeleted, "deleted 2 VolumeSnapshots")
	waitEventContaining(t, b, corev1.EventTypeNormal, deorbit.EventDeorbitDone, "removed 2 VolumeSnapshots")
	waitBundleGone(t, b)
}

// removeWorkloadCRD deletes a CRD from the second cluster and waits until it is
// gone, so that later tests find the second cluster as it was.
func removeWorkloadCRD(t testing.TB, w *workload, name string) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	if err := w.c.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: delete CRD %s in the second cluster: %v", name, err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if w.get(crd) {
			return fmt.Errorf("CRD %s is still in the second cluster", name)
		}
		return nil
	})
}
