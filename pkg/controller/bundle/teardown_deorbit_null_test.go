package bundle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// A teardown checks a plugin spec with its references resolved, as a pass does.
// Here a Bundle in namespace shop takes deorbit's whole kubeConfigSecretRef from
// a referenced object whose field is null: every pass refused the spec, so
// deorbit was never armed; read as absent, null would have meant limbo's own
// cluster, and the teardown deleted a PVC of another namespace (payments/ledger).
func TestTeardownValidatesTheResolvedSpec(t *testing.T) {
	clusterGVK := schema.GroupVersionKind{Group: "x.example.com", Version: "v1", Kind: "Cluster"}
	registry, err := plugin.NewRegistry(deorbit.New(deorbit.Options{Metrics: deorbit.NewMetrics(prometheus.NewRegistry())}))
	if err != nil {
		t.Fatal(err)
	}
	res := limbov1alpha1.Resource{Name: "deorbit",
		References: []limbov1alpha1.Reference{{Name: "kc", Resource: "cluster", Path: "status.kubeconfigRef"}},
		Plugin:     &limbov1alpha1.PluginResource{Name: "deorbit", Spec: &apiextensionsv1.JSON{Raw: []byte(`{"kubeConfigSecretRef":"!{kc}"}`)}}}
	clusterRaw := []byte(`{"apiVersion":"x.example.com/v1","kind":"Cluster","metadata":{"name":"workload"}}`)
	resources := []limbov1alpha1.Resource{{Name: "cluster", Object: &runtime.RawExtension{Raw: clusterRaw}}, res}
	status := limbov1alpha1.BundleStatus{ObservedGeneration: 1, Resources: []limbov1alpha1.ResourceStatus{
		{Name: "cluster", State: limbov1alpha1.ResourceReady, Object: &limbov1alpha1.ObjectReference{APIVersion: "x.example.com/v1", Kind: "Cluster", Namespace: "shop", Name: "workload", UID: "c-uid"}},
		{Name: "deorbit", State: limbov1alpha1.ResourceError, Reason: limbov1alpha1.ReasonInvalidPluginSpec},
	}}
	b := deletedBundle(resources, status)
	yes := true
	cluster := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.example.com/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": "workload", "namespace": "shop", "uid": "c-uid", "labels": map[string]any{limbov1alpha1.LabelBundle: "web"}},
		"status":   map[string]any{"kubeconfigRef": nil}}}
	cluster.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: limbov1alpha1.GroupVersion.String(), Kind: "Bundle", Name: "web", UID: "b-uid", Controller: &yes}})
	// Another tenant's volume in limbo's own cluster.
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "ledger", UID: "pvc-uid"},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pv-ledger"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-ledger", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "cinder.csi.openstack.org"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "cinder.csi.openstack.org", VolumeHandle: "v1"}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: "payments", Name: "ledger", UID: "pvc-uid"}}}
	f := newTeardownFixtureServing(t, []schema.GroupVersionKind{configMapGVK, clusterGVK,
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), corev1.SchemeGroupVersion.WithKind("Service")}, b, registry, cluster, claim, pv)
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.reconcile(t)
		var cur corev1.PersistentVolumeClaim
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(claim), &cur); err != nil || cur.DeletionTimestamp != nil || cur.Annotations[limbov1alpha1.AnnotationDeletionTimestamp] != "" {
			t.Fatalf("PVC payments/ledger: %v, annotations %v: the teardown of Bundle shop/web ran deorbit on limbo's own cluster", err, cur.Annotations)
		}
		c := meta.FindStatusCondition(f.status(t).Conditions, limbov1alpha1.ConditionDeletionFailure)
		if c != nil && strings.Contains(c.Message, `plugin resource "deorbit" teardown: spec, with its references resolved: `) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DeletionFailure = %+v after 10s, want the resolved spec refused", c)
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
}
