package it

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/controller"
	"github.com/limbo-dev/limbo/pkg/localcluster"
	"github.com/limbo-dev/limbo/pkg/uninstall"
)

// Uninstalling limbo with the manifests that installed it deletes its CRDs,
// and the API server deletes every Bundle with them, in background: each was
// torn down as by `kubectl delete bundle`, its objects without a delay deleted
// and the others released to the reaper, which deleted them at their deadline
// — an application gone with the tool that deployed it. A Bundle deleted
// because its CRD is is left as by --cascade=orphan: its objects stay, owned
// by nobody, out of limbo. It needs a control plane of its own: deleting the
// CRDs of the shared one would delete every other test's Bundles.
func TestUninstallLeavesObjects(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, 10*time.Minute)
	cluster, err := localcluster.Start(ctx, localcluster.Config{
		BinDir:       filepath.Join(env.RepoRoot, "bin"),
		CRDPaths:     []string{filepath.Join(env.RepoRoot, "crds")},
		StartTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	c, err := client.New(cluster.RESTConfig(), client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	env.ControllerProcessWithKubeconfig(t, "uninstalled", cluster.KubeconfigPath, "--leader-elect=false")

	const ns = "shop"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{
		objectResource(t, "app", configMap("app", map[string]any{"k": "v"}, nil), limbov1alpha1.Reference{Resource: "db"}),
		objectResource(t, "db", configMap("db", map[string]any{"k": "v"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1h"})),
	}}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		return conditionIs(b, "Ready", metav1.ConditionTrue, "")
	})

	// kubectl delete -f crds/: background deletes of the CRDs, as kubectl's.
	// The Tombstones' goes at once (there are none); the teardowns that
	// follow must not need it.
	for _, name := range []string{uninstall.BundlesCRD, uninstall.TombstonesCRD} {
		if err := c.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{uninstall.BundlesCRD, uninstall.TombstonesCRD} {
		testenv.Eventually(t, 2*time.Minute, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			switch err := c.Get(ctx, client.ObjectKey{Name: name}, crd); {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return err
			}
			return fmt.Errorf("CRD %s still there: %+v", name, crd.Status.Conditions)
		})
	}
	// The Bundle is gone; its objects stay, as nobody's, with no countdown.
	// The garbage collector had time to act: the CRD goes once the Bundle
	// has, and the collector is told of a deleted owner within a second.
	for _, name := range []string{"app", "db"} {
		testenv.Consistently(t, 3*time.Second, func() error {
			cm := &unstructured.Unstructured{}
			cm.SetGroupVersionKind(configMapGVK)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
				return fmt.Errorf("ConfigMap %s: %w", name, err)
			}
			if refs := cm.GetOwnerReferences(); len(refs) > 0 {
				return fmt.Errorf("ConfigMap %s still owned: %v", name, refs)
			}
			for _, mark := range []string{limbov1alpha1.AnnotationDeletionTimestamp, limbov1alpha1.AnnotationReleased} {
				if v, ok := cm.GetAnnotations()[mark]; ok {
					return fmt.Errorf("ConfigMap %s has %s %q", name, mark, v)
				}
			}
			return nil
		})
	}
}
