package it

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/plugins/deorbit"
)

// Helpers of the deorbit tests (deorbit_*). The target is the package's second
// control plane (env.SecondCluster): it has the volume controllers (claims bind,
// protection finalizers go) but no CSI provisioner and no cloud controller, so
// the tests play them: they delete a Released PV and remove a Service's
// load-balancer finalizer.
//
// deorbit acts on a whole cluster, and the tests share the second one: they do
// not run in parallel, and each removes what it created there when it ends.

const (
	deorbitResource = "deorbit"
	// csiDriver is the CSI driver the tests' Bundles list in provisioners.
	csiDriver = "cinder.csi.openstack.org"
)

// workload is a test's part of the second cluster: a namespace named like the
// test's, and the cluster-scoped PVs it created.
type workload struct {
	t      testing.TB
	ns     string
	remote *testenv.RemoteCluster
	c      client.Client
}

// newWorkload gives the test the second cluster, its kubeconfig Secret in ns, and
// a namespace ns there; everything the test created there goes when it ends.
func newWorkload(t testing.TB, ns string) *workload {
	t.Helper()
	remote := env.SecondCluster(t, ns)
	w := &workload{t: t, ns: ns, remote: remote, c: remote.Client}
	ctx := context.Background()
	if err := w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace %s in the second cluster: %v", ns, err)
	}
	t.Cleanup(w.cleanup)
	return w
}

// cleanup removes the test's objects from the second cluster, finalizers
// stripped, so that the next test's deorbit sees none of them.
func (w *workload) cleanup() {
	ctx := context.Background()
	strip := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
	var services corev1.ServiceList
	var claims corev1.PersistentVolumeClaimList
	var volumes corev1.PersistentVolumeList
	_ = w.c.List(ctx, &services, client.InNamespace(w.ns))
	_ = w.c.List(ctx, &claims, client.InNamespace(w.ns))
	_ = w.c.List(ctx, &volumes)
	var objs []client.Object
	for i := range services.Items {
		objs = append(objs, &services.Items[i])
	}
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	for i := range volumes.Items {
		if strings.HasPrefix(volumes.Items[i].Name, w.ns+"-") {
			objs = append(objs, &volumes.Items[i])
		}
	}
	for _, o := range objs {
		_ = w.c.Patch(ctx, o, strip)
		if err := w.c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			w.t.Errorf("cleanup: delete %s in the second cluster: %v", o.GetName(), err)
		}
	}
	if err := w.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}); err != nil && !apierrors.IsNotFound(err) {
		w.t.Errorf("cleanup: delete namespace %s in the second cluster: %v", w.ns, err)
	}
	// deorbit lists the whole cluster: the next test must not find these.
	testenv.Eventually(w.t, testenv.DefaultTimeout, func() error {
		var left corev1.ServiceList
		if err := w.c.List(ctx, &left, client.InNamespace(w.ns)); err != nil || len(left.Items) > 0 {
			return fmt.Errorf("Services left in %s: %d (%v)", w.ns, len(left.Items), err)
		}
		var claims corev1.PersistentVolumeClaimList
		if err := w.c.List(ctx, &claims, client.InNamespace(w.ns)); err != nil || len(claims.Items) > 0 {
			return fmt.Errorf("PVCs left in %s: %d (%v)", w.ns, len(claims.Items), err)
		}
		return nil
	})
}

// volume creates, in the second cluster, a PV of driver (provisioned: with the
// provisioned-by annotation a dynamic provisioner writes; without it, hand-made;
// driver "": an NFS PV) and a claim pre-bound to it, and waits until the claim is
// Bound. The PV's name is the test namespace's followed by name.
func (w *workload) volume(name, driver string, provisioned bool) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	w.t.Helper()
	ctx := context.Background()
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: w.ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Namespace: w.ns, Name: name},
			StorageClassName:              "",
		},
	}
	if driver == "" {
		pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports/" + name}
	} else {
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-" + name}
		if provisioned {
			pv.Annotations = map[string]string{deorbit.AnnotationProvisionedBy: driver}
		}
	}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:       pv.Name,
			StorageClassName: &empty,
		},
	}
	for _, o := range []client.Object{pv, pvc} {
		if err := w.c.Create(ctx, o); err != nil {
			w.t.Fatalf("create %s in the second cluster: %v", o.GetName(), err)
		}
	}
	testenv.Eventually(w.t, testenv.DefaultTimeout, func() error {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("PVC %s is %s, want Bound", name, pvc.Status.Phase)
		}
		return nil
	})
	return pvc, pv
}

// loadBalancer creates a Service of type (LoadBalancer, ClusterIP) in the second
// cluster, with finalizers (the cloud controller's, to hold it).
func (w *workload) service(name string, typ corev1.ServiceType, finalizers ...string) *corev1.Service {
	w.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Finalizers: finalizers},
		Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": name}}}
	if err := w.c.Create(context.Background(), svc); err != nil {
		w.t.Fatalf("create Service %s in the second cluster: %v", name, err)
	}
	return svc
}

// get reads obj from the second cluster; it reports false when it is gone.
func (w *workload) get(obj client.Object) bool {
	w.t.Helper()
	err := w.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		w.t.Fatalf("read %s from the second cluster: %v", obj.GetName(), err)
	}
	return true
}

// waitGone waits until obj is gone from the second cluster.
func (w *workload) waitGone(obj client.Object) {
	w.t.Helper()
	testenv.Eventually(w.t, testenv.DefaultTimeout, func() error {
		if w.get(obj.DeepCopyObject().(client.Object)) {
			return fmt.Errorf("%s %s is still in the second cluster", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
		}
		return nil
	})
}

// untouched checks that obj still exists in the second cluster, with the same
// UID, not terminating and without any of limbo's marks.
func (w *workload) untouched(obj client.Object) error {
	cur := obj.DeepCopyObject().(client.Object)
	if !w.get(cur) {
		return fmt.Errorf("%s was deleted", obj.GetName())
	}
	if cur.GetUID() != obj.GetUID() || cur.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s was deleted (uid %s, deletionTimestamp %v)", obj.GetName(), cur.GetUID(), cur.GetDeletionTimestamp())
	}
	if _, stamped := cur.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
		return fmt.Errorf("%s was stamped: %v", obj.GetName(), cur.GetAnnotations())
	}
	return nil
}

// untouchedButStamped checks that obj still exists, the same object, not
// terminating (it may carry limbo's stamp).
func (w *workload) untouchedButStamped(obj client.Object) error {
	cur := obj.DeepCopyObject().(client.Object)
	if !w.get(cur) || cur.GetUID() != obj.GetUID() || cur.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s was deleted", obj.GetName())
	}
	return nil
}

// playProvisioner deletes the PVs once their claim is gone (a CSI provisioner
// deletes the volume, then the PV): it waits until pv is Released.
func (w *workload) playProvisioner(pv *corev1.PersistentVolume) {
	w.t.Helper()
	testenv.Eventually(w.t, testenv.DefaultTimeout, func() error {
		cur := pv.DeepCopy()
		if !w.get(cur) {
			return nil
		}
		if cur.Status.Phase != corev1.VolumeReleased {
			return fmt.Errorf("PV %s is %s, want Released", cur.Name, cur.Status.Phase)
		}
		return w.c.Delete(context.Background(), cur)
	})
	w.waitGone(pv)
}

// releaseLoadBalancer plays the cloud controller: the load balancer is gone, its
// finalizer goes.
func (w *workload) releaseLoadBalancer(svc *corev1.Service) {
	w.t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
	if err := w.c.Patch(context.Background(), svc.DeepCopy(), patch); err != nil && !apierrors.IsNotFound(err) {
		w.t.Fatalf("remove the finalizer of Service %s: %v", svc.Name, err)
	}
}

// deorbitBundle creates a Bundle with a deorbit resource aimed at the second
// cluster (the test's kubeconfig Secret, provisioners [csiDriver]; spec entries
// override), and extra resources; it deletes it, waiting until it is gone, when
// the test ends (without its deorbit resource: no deorbit).
func deorbitBundle(t testing.TB, ns, delay string, spec map[string]any, extra ...limbov1alpha1.Resource) *limbov1alpha1.Bundle {
	t.Helper()
	full := map[string]any{"kubeConfigSecretRef": map[string]any{"name": testenv.WorkloadKubeconfigSecret}, "provisioners": []string{csiDriver}}
	for k, v := range spec {
		full[k] = v
	}
	raw, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	resources := append([]limbov1alpha1.Resource{{Name: deorbitResource, Plugin: &limbov1alpha1.PluginResource{
		Name: deorbit.Name, DeletionDelay: delay, Spec: &apiextensionsv1.JSON{Raw: raw}}}}, extra...)
	b := createBundle(t, ns, "workload", resources...)
	t.Cleanup(func() {
		// A test that did not tear the Bundle down must not leave a deorbit running
		// over the shared second cluster: the deorbit resource leaves the spec
		// first, then the Bundle is deleted (the teardown needs no garbage
		// collector, whose --cascade=orphan handling can lag on a busy cluster).
		testenv.Eventually(t, testenv.DefaultTimeout, func() error {
			var cur limbov1alpha1.Bundle
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); apierrors.IsNotFound(err) {
				return nil
			} else if err != nil {
				return err
			}
			cur.Spec.Resources = extra
			cur.Spec.AllowEmpty = true
			return env.Client.Update(context.Background(), &cur)
		})
		if err := env.Client.Delete(context.Background(), b); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete Bundle: %v", err)
		}
		waitGone(t, limbov1alpha1.BundleGVK, b.Namespace, b.Name)
	})
	return b
}

// deorbitHeldByLoadBalancer starts the teardown of a deorbit that its load
// balancer holds: a provisioned claim "data" and a LoadBalancer Service "ingress"
// with its cloud controller's finalizer in w, a deorbit Bundle (delay 0s, with
// extra resources) armed for both, deleted in the background, and the claim gone.
// It returns the claim's PV and the Service for the test to play their
// provisioner and cloud controller.
func deorbitHeldByLoadBalancer(t testing.TB, ns string, w *workload, extra ...limbov1alpha1.Resource) (*corev1.PersistentVolume, *corev1.Service, *limbov1alpha1.Bundle) {
	t.Helper()
	claim, volume := w.volume("data", csiDriver, true)
	lb := w.service("ingress", corev1.ServiceTypeLoadBalancer, deorbit.FinalizerLoadBalancerCleanup)
	b := deorbitBundle(t, ns, "0s", nil, extra...)
	waitArmed(t, b, "armed: 1 PVC, 1 LoadBalancer Service")
	deleteBundle(t, b, metav1.DeletePropagationBackground)
	w.waitGone(claim)
	return volume, lb, b
}

// waitArmed waits until the Bundle is Ready with deorbit's armed report starting
// with report.
func waitArmed(t testing.TB, b *limbov1alpha1.Bundle, report string) *limbov1alpha1.Bundle {
	t.Helper()
	return waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		if err := conditionIs(cur, "Ready", metav1.ConditionTrue, ""); err != nil {
			return err
		}
		if st := resourceStatus(cur, deorbitResource); st == nil || !strings.HasPrefix(st.Message, report) {
			return fmt.Errorf("resource %s: %+v, want a message starting with %q", deorbitResource, st, report)
		}
		return nil
	})
}

// waitTeardown waits until the deleted Bundle's ContentRemaining condition
// contains part.
func waitTeardown(t testing.TB, b *limbov1alpha1.Bundle, part string) *limbov1alpha1.Bundle {
	t.Helper()
	var cur limbov1alpha1.Bundle
	testenv.Eventually(t, testenv.DefaultTimeout, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == limbov1alpha1.ConditionContentRemaining && strings.Contains(c.Message, part) {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v; want ContentRemaining with %q", cur.Status.Conditions, part)
	})
	return &cur
}

// eventsWith returns the Bundle's events of reason whose message contains part.
func eventsWith(t testing.TB, b *limbov1alpha1.Bundle, reason, part string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	for _, e := range events(t, b) {
		if e.Reason == reason && strings.Contains(e.Message, part) {
			out = append(out, e)
		}
	}
	return out
}

// volumeSnapshot is a VolumeSnapshot object of the second cluster.
func volumeSnapshot(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"source": map[string]any{"persistentVolumeClaimName": "data"}}}}
	u.SetGroupVersionKind(deorbit.VolumeSnapshotGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
