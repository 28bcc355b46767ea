package deorbit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/listpages/listpagestest"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/plugin/plugintest"
	"github.com/limbo-dev/limbo/pkg/remotecluster"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

const cinder = "cinder.csi.openstack.org"

// The spec's schema, generated from Spec, as the Bundle reconciler checks it.
func TestSchema(t *testing.T) {
	plugintest.ExpectSpecs(t, New(Options{Metrics: NewMetrics(prometheus.NewRegistry())}), []plugintest.SpecCase{
		{Spec: `{}`},
		{Spec: `{"kubeConfigSecretRef":{"name":"workload-kubeconfig","key":"value"},"provisioners":["` + cinder + `"],"volumeSnapshots":true,"loadBalancerWait":"5m","timeout":"24h","apiUnavailableTimeout":"2m"}`},
		{Spec: `{"kubeConfigSecretRef":{"key":"value"}}`, Want: `spec.kubeConfigSecretRef.name: Required value`},
		{Spec: `{"kubeConfigSecretRef":{"name":""}}`, Want: `spec.kubeConfigSecretRef.name: Invalid value: "": kubeConfigSecretRef.name in body should be at least 1 chars long`},
		{Spec: `{"timeout":"-1h"}`, Want: `spec.timeout: Invalid value: "-1h": timeout in body should match '` + plugin.DurationPattern + `'`},
		{Spec: `{"provisoners":[]}`, Want: `spec: Invalid value: "provisoners": .provisoners in body is a forbidden property`},
		// A reference that resolved to null must not widen what is deleted:
		// absent, the target is this cluster and the drivers any.
		{Spec: `{"kubeConfigSecretRef":null}`, Want: `spec.kubeConfigSecretRef: Invalid value: "null": kubeConfigSecretRef in body must be of type object: "null"`},
		{Spec: `{"provisioners":null}`, Want: `spec.provisioners: Invalid value: "null": provisioners in body must be of type array: "null"`},
	})
	// parse, the plugin's own reading, refuses them too (a caller that skipped
	// the schema must not get "this cluster" for null).
	for _, spec := range []string{`{"kubeConfigSecretRef":null}`, `{"provisioners": null }`} {
		if _, err := parse([]byte(spec)); err == nil || !strings.Contains(err.Error(), "leave the field out") {
			t.Errorf("parse(%s) = %v, want it refused", spec, err)
		}
	}
	cfg, err := parse([]byte(`{}`))
	if err != nil || !cfg.snapshots || cfg.lbWait != DefaultLoadBalancerWait || cfg.timeout != DefaultTimeout || cfg.apiUnavailable != DefaultAPIUnavailableTimeout {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	for spec, want := range map[string]bool{`{"volumeSnapshots":true}`: true, `{"volumeSnapshots":false}`: false} {
		if cfg, err := parse([]byte(spec)); err != nil || cfg.snapshots != want {
			t.Errorf("parse(%s): snapshots %v, %v; want %v", spec, cfg.snapshots, err, want)
		}
	}
}

var now = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func pv(name, driver string, provisionedBy bool, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec:   corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
		Status: corev1.PersistentVolumeStatus{Phase: phase}}
	if driver != "" {
		v.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name}
		if provisionedBy {
			v.Annotations[AnnotationProvisionedBy] = driver
		}
	} else {
		v.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
	}
	if claim != nil {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	}
	return v
}

func pvc(name, volume string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func service(name string, typ corev1.ServiceType, finalizers ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Finalizers: finalizers}, Spec: corev1.ServiceSpec{Type: typ}}
}

func snapshot(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(VolumeSnapshotGVK)
	u.SetNamespace("app")
	u.SetName(name)
	return u
}

// fakeCluster is a target cluster; withSnapshots makes it serve VolumeSnapshots.
func fakeCluster(t *testing.T, withSnapshots bool, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	if !withSnapshots { // as a real client's RESTMapper answers
		b = b.WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if list.GetObjectKind().GroupVersionKind().Group == VolumeSnapshotGVK.Group {
				return &meta.NoKindMatchError{GroupKind: VolumeSnapshotGVK.GroupKind(), SearchedVersions: []string{"v1"}}
			}
			return c.List(ctx, list, opts...)
		}})
	}
	return b.Build()
}

// What deorbit takes: Bound claims of PVs a listed CSI driver provisioned (not
// in-tree, NFS or hand-made ones, nor Pending claims), LoadBalancer Services only,
// VolumeSnapshots when the CRD is there; and the PVs it waits for (Released ones
// its provisioner deletes: not Failed, not Retain).
func TestListSelects(t *testing.T) {
	bound := pvc("bound", "pv-bound", corev1.ClaimBound)
	other := pvc("other-driver", "pv-other", corev1.ClaimBound)
	handMade := pvc("hand-made", "pv-hand", corev1.ClaimBound)
	nfs := pvc("nfs", "pv-nfs", corev1.ClaimBound)
	pending := pvc("pending", "pv-pending", corev1.ClaimPending)
	gone := pvc("gone", "", "") // its PV is Released: waited for
	// In-tree Cinder volumes dynamically provisioned before CSI migration, one
	// migrated to the listed driver (deorbit's), one not (never).
	migrated, unmigrated := pvc("migrated", "pv-migrated", corev1.ClaimBound), pvc("unmigrated", "pv-unmigrated", corev1.ClaimBound)
	inTree := func(name string, claim *corev1.PersistentVolumeClaim, migratedTo string) *corev1.PersistentVolume {
		v := pv(name, "", false, claim, corev1.VolumeBound)
		v.Spec.NFS, v.Spec.Cinder = nil, &corev1.CinderPersistentVolumeSource{VolumeID: name}
		v.Annotations[AnnotationProvisionedBy] = "kubernetes.io/cinder"
		if migratedTo != "" {
			v.Annotations[AnnotationMigratedTo] = migratedTo
		}
		return v
	}
	// A Released PV its owner chose to keep (reclaim policy Retain): its
	// provisioner never deletes it, so deorbit must not wait for it (it would
	// wait out its timeout, then report DeorbitTimedOut).
	retained := pv("pv-retained", cinder, true, gone, corev1.VolumeReleased)
	retained.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	// An in-tree volume made by hand (no provisioned-by), marked migrated to the
	// listed driver: not deorbit's either.
	handMadeMigrated := pvc("hand-made-migrated", "pv-hand-migrated", corev1.ClaimBound)
	handMadeInTree := inTree("pv-hand-migrated", handMadeMigrated, cinder)
	delete(handMadeInTree.Annotations, AnnotationProvisionedBy)
	objs := []client.Object{bound, other, handMade, nfs, pending, migrated, unmigrated, retained, handMadeMigrated, handMadeInTree,
		inTree("pv-migrated", migrated, cinder), inTree("pv-unmigrated", unmigrated, ""),
		pv("pv-bound", cinder, true, bound, corev1.VolumeBound),
		pv("pv-other", "other.csi.example.com", true, other, corev1.VolumeBound),
		pv("pv-hand", cinder, false, handMade, corev1.VolumeBound),
		pv("pv-nfs", "", false, nfs, corev1.VolumeBound),
		pv("pv-pending", cinder, true, pending, corev1.VolumeAvailable),
		pv("pv-released", cinder, true, gone, corev1.VolumeReleased),
		pv("pv-failed", cinder, true, gone, corev1.VolumeFailed),
		service("lb", corev1.ServiceTypeLoadBalancer), service("cluster-ip", corev1.ServiceTypeClusterIP), service("node-port", corev1.ServiceTypeNodePort),
		snapshot("snap"),
	}
	for _, tc := range []struct {
		name          string
		spec          string
		withSnapshots bool
		armed         string
		volumes       string
	}{
		{"listed provisioner", `{"provisioners":["` + cinder + `"]}`, true, "armed: 2 PVCs, 1 LoadBalancer Service, 1 VolumeSnapshot", "1 PV (pv-released)"},
		{"another listed provisioner", `{"provisioners":["other.csi.example.com"]}`, true, "armed: 1 PVC, 1 LoadBalancer Service, 1 VolumeSnapshot", ""},
		{"any CSI driver", `{}`, true, "armed: 3 PVCs, 1 LoadBalancer Service, 1 VolumeSnapshot", "1 PV (pv-released)"}, // not the hand-made one
		{"no snapshot CRD", `{"provisioners":["` + cinder + `"]}`, false, "armed: 2 PVCs, 1 LoadBalancer Service, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)", "1 PV (pv-released)"},
		{"snapshots off", `{"provisioners":["` + cinder + `"],"volumeSnapshots":false}`, true, "armed: 2 PVCs, 1 LoadBalancer Service, VolumeSnapshots skipped (volumeSnapshots: false)", "1 PV (pv-released)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live []client.Object
			for _, o := range objs {
				if _, isSnapshot := o.(*unstructured.Unstructured); isSnapshot && !tc.withSnapshots {
					continue
				}
				live = append(live, o.DeepCopyObject().(client.Object))
			}
			cfg, err := parse([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			c, err := list(context.Background(), fakeCluster(t, tc.withSnapshots, live...), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.armed(); got != tc.armed {
				t.Errorf("armed %q, want %q", got, tc.armed)
			}
			if got := c.kinds()[kindVolumes].describe(); got != tc.volumes {
				t.Errorf("volumes to wait for: %q, want %q", got, tc.volumes)
			}
			for _, it := range c.items() {
				if it.Desired || it.Object.GetObjectKind().GroupVersionKind().Kind == "" {
					t.Errorf("item %s: desired %v, kind %q", it.Object.GetName(), it.Desired, it.Object.GetObjectKind().GroupVersionKind().Kind)
				}
			}
		})
	}
}

// A claim being deleted stays an item until it is gone, whatever its phase (one
// deleted while its binding was still Pending), and its PV, its claim no longer
// live, is waited for.
func TestListKeepsAClaimBeingDeleted(t *testing.T) {
	claim := pvc("binding", "pv-binding", corev1.ClaimPending)
	claim.Finalizers, claim.DeletionTimestamp = []string{"kubernetes.io/pvc-protection"}, &metav1.Time{Time: now}
	cfg, err := parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := list(context.Background(), fakeCluster(t, false, claim, pv("pv-binding", cinder, true, claim, corev1.VolumeBound)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.debris(), "1 PVC (app/binding); 1 PV (pv-binding)"; got != want {
		t.Errorf("debris %q, want %q", got, want)
	}
}

// A VolumeSnapshot listing that fails, but for a CRD not installed, fails the
// read: the claims are not deleted before the snapshots of their volumes.
func TestListFailsOnASnapshotListingError(t *testing.T) {
	claim := pvc("data", "pv-data", corev1.ClaimBound)
	target := interceptor.NewClient(fakeCluster(t, true, claim, pv("pv-data", cinder, true, claim, corev1.VolumeBound)), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if list.GetObjectKind().GroupVersionKind().Group == VolumeSnapshotGVK.Group {
				return apierrors.NewServiceUnavailable("the snapshot webhook is down")
			}
			return c.List(ctx, list, opts...)
		}})
	cfg, err := parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := list(context.Background(), target, cfg); err == nil || !strings.Contains(err.Error(), "list VolumeSnapshots") {
		t.Errorf("list = %+v, %v; want the VolumeSnapshots' error", c, err)
	}
}

// A kind's description names five items at most, and says how many more.
func TestKindDescribe(t *testing.T) {
	for n, want := range map[int]string{
		0: "",
		1: "1 PV (pv-0)",
		5: "5 PVs (pv-0, pv-1, pv-2, pv-3, pv-4)",
		7: "7 PVs (pv-0, pv-1, pv-2, pv-3, pv-4 and 2 more)",
	} {
		k := kind{singular: "PV", plural: "PVs"}
		for i := range n {
			k.names = append(k.names, fmt.Sprintf("pv-%d", i))
		}
		if got := k.describe(); got != want {
			t.Errorf("describe of %d = %q, want %q", n, got, want)
		}
	}
}

// The target is listed in pages of listPageSize (a whole listing of a large
// cluster could pass an answer's bound, responselimit.MaxBody), and every page
// counts: 1,201 LoadBalancer Services are three pages, all of them taken.
func TestListPaged(t *testing.T) {
	const services = 2*listPageSize + 201
	var objs []client.Object
	for i := range services {
		objs = append(objs, service(fmt.Sprintf("lb-%04d", i), corev1.ServiceTypeLoadBalancer))
	}
	pages := map[string][]int64{} // list kind: the limit of each call
	target := fakeCluster(t, true, objs...)
	// The fake serves everything at once; a real API server pages so.
	paging := interceptor.NewClient(target, interceptor.Funcs{List: listpagestest.List(func(list client.ObjectList, o *client.ListOptions) {
		kind := fmt.Sprintf("%T", list)
		pages[kind] = append(pages[kind], o.Limit)
	})})
	cfg, err := parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := list(context.Background(), paging, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.services); got != services {
		t.Errorf("%d Services taken, want %d", got, services)
	}
	if got, want := pages["*v1.ServiceList"], []int64{listPageSize, listPageSize, listPageSize}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Services listed with limits %v, want %v", got, want)
	}
	for kind, limits := range pages {
		for _, limit := range limits {
			if limit != listPageSize {
				t.Errorf("%s listed with limit %d, want %d", kind, limit, listPageSize)
			}
		}
	}
}

// teardownHarness runs Teardown passes against a fake target (this cluster).
type teardownHarness struct {
	t       *testing.T
	plugin  *Plugin
	metrics *prometheus.Registry
	reader  client.Reader
	bundle  *limbov1alpha1.Bundle
	state   string
	now     time.Time
	// callTimeout bounds each pass, as plugin.CallTimeout bounds a Teardown
	// call; zero: no bound.
	callTimeout time.Duration
}

func newTeardownHarness(t *testing.T, spec string, reader client.Reader) *teardownHarness {
	reg := prometheus.NewRegistry()
	deleted := metav1.NewTime(now)
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cluster", UID: "b-uid", DeletionTimestamp: &deleted},
		Spec: limbov1alpha1.BundleSpec{Resources: []limbov1alpha1.Resource{{Name: "deorbit", Plugin: &limbov1alpha1.PluginResource{Name: Name, DeletionDelay: "1m",
			Spec: &apiextensionsv1.JSON{Raw: []byte(spec)}}}}}}
	return &teardownHarness{t: t, plugin: New(Options{Metrics: NewMetrics(reg)}), metrics: reg, reader: reader, bundle: b, now: now}
}

// newRemoteTeardownHarness runs Teardown passes against another cluster,
// targetServer's, holding objs and answering as answer says: reached through
// kubeconfig Secret "target" (spec names it), and told from this cluster by
// their kube-system Namespaces.
func newRemoteTeardownHarness(t *testing.T, spec string, answer func(path string) int, objs ...client.Object) *teardownHarness {
	srv := targetServer(t, answer, objs...)
	return newTeardownHarness(t, spec, fakeCluster(t, false, remotecluster.NewKubeconfigSecret("team", "target", kubeconfigOf(srv)),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "this-cluster-uid"}}))
}

// targetAnswer is a targetServer answer that a test switches: every request is
// answered with its status (0: served).
type targetAnswer struct{ status atomic.Int32 }

func (a *targetAnswer) answer(string) int { return int(a.status.Load()) }

func (h *teardownHarness) pass() (*plugin.TeardownResult, error) {
	h.t.Helper()
	ctx := context.Background()
	if h.callTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.callTimeout)
		defer cancel()
	}
	res, err := h.plugin.Teardown(ctx, plugin.Request{Bundle: h.bundle, Resource: "deorbit",
		Spec: h.bundle.Spec.Resources[0].Plugin.Spec.Raw, Reader: h.reader, Now: h.now, TeardownState: h.state})
	if res == nil {
		h.t.Fatalf("no result (error %v)", err)
	}
	h.state = res.State
	return res, err
}

func reasons(events []plugin.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// A full deorbit: items to the engine, a DeorbitDeleted event per kind once it is
// gone, a wait for the Released PV and for the load balancer of a Service deleted
// without the finalizer, DeorbitDone once, then passes that only repeat it.
func TestTeardownProgress(t *testing.T) {
	claim := pvc("data", "pv-data", corev1.ClaimBound)
	volume := pv("pv-data", cinder, true, claim, corev1.VolumeBound)
	lb := service("lb", corev1.ServiceTypeLoadBalancer)
	target := fakeCluster(t, false, claim, volume, lb)
	h := newTeardownHarness(t, `{"loadBalancerWait":"5m"}`, target)

	res, err := h.pass()
	if err != nil || res.Done || len(res.Items) != 2 || res.Cluster != nil || len(res.Events) != 0 {
		t.Fatalf("first pass: %+v, %v; want 2 items, not done, no events", res, err)
	}
	if !strings.Contains(res.Message, "to delete: 1 PVC (app/data), 1 LoadBalancer Service (app/lb)") {
		t.Errorf("message %q", res.Message)
	}

	// The engine deleted both; the PV is Released, waiting for its provisioner.
	ctx := context.Background()
	for _, o := range []client.Object{claim, lb} {
		if err := target.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	volume.Status.Phase = corev1.VolumeReleased
	if err := target.Update(ctx, volume); err != nil {
		t.Fatal(err)
	}
	h.now = now.Add(2 * time.Minute)
	res, err = h.pass()
	if err != nil || res.Done || len(res.Items) != 0 {
		t.Fatalf("second pass: %+v, %v", res, err)
	}
	if got, want := strings.Join(reasons(res.Events), ","), "Normal DeorbitDeleted,Normal DeorbitDeleted,Normal DeorbitWaiting,Normal DeorbitWaiting"; got != want {
		t.Errorf("events %s, want %s: %+v", got, want, res.Events)
	}
	if !strings.Contains(res.Message, "waiting for 1 PV (pv-data) to be deleted by their provisioner") || !strings.Contains(res.Message, "load balancers (loadBalancerWait)") {
		t.Errorf("message %q", res.Message)
	}

	// The provisioner deletes the PV: only the load-balancer wait remains (the
	// Service, first seen at 12:00, was due at 12:01: it waits until 12:06).
	if err := target.Delete(ctx, volume); err != nil {
		t.Fatal(err)
	}
	h.now = now.Add(4 * time.Minute)
	res, _ = h.pass()
	if res.Done || len(res.Events) != 0 || !strings.Contains(res.Message, "waiting until 2026-03-14T12:06:00Z") || res.RequeueAfter != 2*time.Minute {
		t.Errorf("during the load-balancer wait: done %v, events %+v, message %q, requeue after %v", res.Done, res.Events, res.Message, res.RequeueAfter)
	}
	h.now = now.Add(7 * time.Minute)
	res, _ = h.pass()
	if !res.Done || strings.Join(reasons(res.Events), ",") != "Normal DeorbitDone" || !strings.Contains(res.Message, "removed 1 PVCs, 1 LoadBalancer Services") {
		t.Errorf("after the wait: %+v", res)
	}
	// From the deletion at 12:00: the items were seen gone at 12:02, and the
	// load-balancer wait ended the deorbit at 12:07.
	want := map[string]phaseObservations{PhaseDelete: {1, 120}, PhaseWait: {1, 300}, PhaseTotal: {1, 420}}
	if got := phaseDurations(t, h.metrics); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("phase durations (count, seconds) %v, want %v", got, want)
	}
	// Done is kept: later passes touch nothing (a nil reader would panic).
	h.reader = nil
	res, err = h.pass()
	if err != nil || !res.Done || len(res.Events) != 0 {
		t.Errorf("pass after done: %+v, %v", res, err)
	}
}

// The load-balancer wait is for the LoadBalancer Services without the cloud
// controller's finalizer, and lasts until the latest of their waits: one whose
// countdown ends later (stamped at 12:30: due 12:31) holds it past another's
// (due 12:01). One held by another finalizer is waited for too: its load
// balancer goes once it is gone.
func TestTeardownLoadBalancerWait(t *testing.T) {
	stamped := func(svc *corev1.Service, at time.Time) *corev1.Service {
		svc.Annotations = map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: at.Format(time.RFC3339)}
		return svc
	}
	held := service("lb", corev1.ServiceTypeLoadBalancer, "example.com/hold")
	held.DeletionTimestamp = &metav1.Time{Time: now}
	for _, tc := range []struct {
		name     string
		services []client.Object
		want     string // the message at 12:04, the Services gone; "" done
	}{
		{"guarded by the cleanup finalizer", []client.Object{service("lb", corev1.ServiceTypeLoadBalancer, FinalizerLoadBalancerCleanup)}, ""},
		{"one without the finalizer", []client.Object{service("lb", corev1.ServiceTypeLoadBalancer)}, "waiting until 2026-03-14T12:06:00Z"},
		{"one without the finalizer, held by another", []client.Object{held}, "waiting until 2026-03-14T12:06:00Z"},
		{"two without the finalizer, the later first", []client.Object{stamped(service("a-lb", corev1.ServiceTypeLoadBalancer), now.Add(30*time.Minute)),
			service("b-lb", corev1.ServiceTypeLoadBalancer)}, "waiting until 2026-03-14T12:36:00Z"},
		{"two without the finalizer, the later last", []client.Object{service("a-lb", corev1.ServiceTypeLoadBalancer),
			stamped(service("b-lb", corev1.ServiceTypeLoadBalancer), now.Add(30*time.Minute))}, "waiting until 2026-03-14T12:36:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := fakeCluster(t, false, tc.services...)
			h := newTeardownHarness(t, `{"loadBalancerWait":"5m"}`, target)
			if res, err := h.pass(); err != nil || res.Done || len(res.Items) != len(tc.services) {
				t.Fatalf("first pass: %+v, %v", res, err)
			}
			for _, svc := range tc.services {
				svc.SetFinalizers(nil)
				if err := target.Update(context.Background(), svc); err != nil {
					t.Fatal(err)
				}
				if err := target.Delete(context.Background(), svc); client.IgnoreNotFound(err) != nil {
					t.Fatal(err)
				}
			}
			h.now = now.Add(4 * time.Minute)
			res, err := h.pass()
			if err != nil || res.Done != (tc.want == "") || !strings.Contains(res.Message, tc.want) {
				t.Errorf("at 12:04: done %v, message %q, %v; want %q", res.Done, res.Message, err, tc.want)
			}
		})
	}
}

// VolumeSnapshots are deleted before the claims and Services (DESIGN §4): the
// engine goes through the items' groups in name order, and deorbit's group of
// snapshots sorts first. Nothing else puts them first: by kind, as within a
// group, they come last, and they are named to come last by name too.
func TestTeardownDeletesSnapshotsFirst(t *testing.T) {
	claim := pvc("a-data", "pv-data", corev1.ClaimBound)
	target := fakeCluster(t, true, claim, pv("pv-data", cinder, true, claim, corev1.VolumeBound),
		service("lb", corev1.ServiceTypeLoadBalancer), snapshot("z-snap"), snapshot("zz-snap"))
	var deletes []string // the kinds of the DELETEs, in the order they were sent
	recording := interceptor.NewClient(target, interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		deletes = append(deletes, obj.GetObjectKind().GroupVersionKind().Kind)
		return c.Delete(ctx, obj, opts...)
	}})
	h := newTeardownHarness(t, `{}`, recording)
	res, err := h.pass()
	if err != nil || len(res.Items) != 4 {
		t.Fatalf("first pass: %+v, %v; want 4 items", res, err)
	}
	// The items as the teardown hands them to the engine, but without the
	// resource's delay: all are due in this one pass, as all are once a delay
	// that started for them together ends.
	engine := &softdelete.Engine{Client: recording, Reader: recording, Recorder: &record.FakeRecorder{},
		Clock: clocktesting.NewFakePassiveClock(now), Metrics: softdelete.NewMetrics(prometheus.NewRegistry())}
	out := engine.ProcessItems(context.Background(), h.bundle, softdelete.ItemSet{Owner: softdelete.ItemOwner(client.ObjectKeyFromObject(h.bundle), "deorbit"),
		Items: res.Items, NotBefore: now})
	if out.Err != nil || len(deletes) != 4 {
		t.Fatalf("DELETEs %v (%v); want one per item", deletes, out.Err)
	}
	if got := strings.Join(deletes[:2], ","); got != "VolumeSnapshot,VolumeSnapshot" {
		t.Errorf("DELETEs in the order %v; want the VolumeSnapshots' first", deletes)
	}
}

// phaseObservations are what limbo_deorbit_phase_duration_seconds observed of
// a phase: how many durations, and their sum in seconds.
type phaseObservations struct {
	count uint64
	sum   float64
}

// phaseDurations are reg's observations of limbo_deorbit_phase_duration_seconds,
// by phase.
func phaseDurations(t *testing.T, reg *prometheus.Registry) map[string]phaseObservations {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]phaseObservations{}
	for _, f := range families {
		if f.GetName() != "limbo_deorbit_phase_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					out[l.GetValue()] = phaseObservations{m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()}
				}
			}
		}
	}
	return out
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}
func (r errReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return r.err }

// An unreachable target (another cluster answering nothing but that it is
// unavailable) is retried until it has been unreachable for
// apiUnavailableTimeout; then deorbit gives up with DeorbitTimedOut naming the
// debris it last saw. Another error gives up only after timeout. Each counts as
// a failure of its step.
func TestTeardownGivesUp(t *testing.T) {
	var target targetAnswer
	h := newRemoteTeardownHarness(t, `{"kubeConfigSecretRef":{"name":"target"},"volumeSnapshots":false,"apiUnavailableTimeout":"2m","timeout":"1h"}`,
		target.answer, boundClaimObjects()...)
	if res, err := h.pass(); err != nil || res.Done {
		t.Fatalf("first pass: %+v, %v", res, err)
	}

	target.status.Store(http.StatusServiceUnavailable)
	h.now = now.Add(time.Minute)
	res, err := h.pass()
	if err == nil || res.Done || strings.Join(reasons(res.Events), ",") != "Warning DeorbitFailed" {
		t.Fatalf("unreachable for 0s: %+v, %v; want a retried failure, evented", res, err)
	}
	h.now = now.Add(2 * time.Minute)
	if res, err = h.pass(); err == nil || res.Done || len(res.Events) != 0 {
		t.Fatalf("unreachable for 1m: %+v, %v; want retried, evented once only", res, err)
	}
	h.now = now.Add(3 * time.Minute)
	res, err = h.pass()
	if err != nil || !res.Done || strings.Join(reasons(res.Events), ",") != "Warning DeorbitTimedOut" ||
		!strings.Contains(res.Warning, "unreachable for 2m0s") || !strings.Contains(res.Warning, "debris left behind: 1 PVC (app/data)") {
		t.Fatalf("unreachable for 2m: %+v, %v; want a give-up naming the PVC", res, err)
	}
	if got := testutil.ToFloat64(h.plugin.opts.Metrics.Failures.WithLabelValues(StepUnreachable)); got != 3 {
		t.Errorf("unreachable failures %v, want 3 (one per failed pass)", got)
	}
	if got := testutil.ToFloat64(h.plugin.opts.Metrics.Failures.WithLabelValues(StepAPIUnavailable)); got != 1 {
		t.Errorf("api_unavailable give-ups %v, want 1", got)
	}

	// An error that is not unreachability waits for the timeout.
	h = newTeardownHarness(t, `{"apiUnavailableTimeout":"2m","timeout":"1h"}`, errReader{errors.New("forbidden")})
	for _, at := range []time.Duration{0, 59 * time.Minute} {
		h.now = now.Add(at)
		if res, _ := h.pass(); res.Done {
			t.Fatalf("gave up on an answered error %v after the deletion, before the timeout", at)
		}
	}
	h.now = now.Add(time.Hour)
	// Never listed, the target's debris is unknown, not "none": a cluster whose
	// volumes were never seen must not read as one found empty.
	if res, _ := h.pass(); !res.Done || !strings.Contains(res.Warning, "timeout 1h0m0s passed") || strings.Join(reasons(res.Events), ",") != "Warning DeorbitTimedOut" ||
		!strings.HasSuffix(res.Warning, "debris left behind: unknown (the target cluster was never listed)") {
		t.Errorf("past the timeout: %+v", res)
	}
	if got := testutil.ToFloat64(h.plugin.opts.Metrics.Failures.WithLabelValues(StepList)); got != 3 {
		t.Errorf("list failures %v, want 3", got)
	}
}

// The unreachable time is of the current run of unreachable passes: a pass that
// reads the target, or fails otherwise, ends the run, and the next starts anew.
func TestTeardownUnreachableRunStartsAnew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between int32 // the target's answer to the second pass's requests
	}{
		{"a pass that read the target", 0},
		{"a pass that failed otherwise", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var target targetAnswer
			h := newRemoteTeardownHarness(t, `{"kubeConfigSecretRef":{"name":"target"},"volumeSnapshots":false,"apiUnavailableTimeout":"2m","timeout":"1h"}`,
				target.answer, boundClaimObjects()...)
			for i, status := range []int32{http.StatusServiceUnavailable, tc.between, http.StatusServiceUnavailable, http.StatusServiceUnavailable} {
				target.status.Store(status)
				h.now = now.Add(time.Duration(i) * time.Minute)
				res, err := h.pass()
				if res.Done {
					t.Fatalf("gave up at pass %d, unreachable for 1m at most: %s", i, res.Warning)
				}
				if unreachable := err != nil && strings.Contains(err.Error(), "is unreachable"); unreachable != (status == http.StatusServiceUnavailable) {
					t.Fatalf("pass %d, the target answering %d: %v; unreachable %v", i, status, err, unreachable)
				}
			}
		})
	}
}

// deorbit's first pass may come long after the Bundle's deletion (every limbo
// replica down, the teardown held by a spec error until the Bundle is edited):
// its timeout runs from that first pass, kept in the state. A first pass 25h
// after the deletion, past a 24h timeout, hands the claim to the engine and
// waits as any deorbit, until its own 24h have passed, instead of giving up
// with nothing deleted; a target unreachable then is given up after
// apiUnavailableTimeout, as always. A state kept by an older limbo, without
// the first pass, still counts from the deletion.
func TestTeardownFirstPassPastTheTimeout(t *testing.T) {
	const limits = `"timeout":"24h","apiUnavailableTimeout":"2m"`
	thisCluster := func(t *testing.T) *teardownHarness { return newTeardownHarness(t, `{`+limits+`}`, boundClaim(t)) }
	type pass struct {
		at      time.Duration // after the deletion
		items   int
		warning string // the give-up's, a part; "" not given up
	}
	for _, tc := range []struct {
		name    string
		state   string
		harness func(t *testing.T) *teardownHarness
		passes  []pass
	}{
		{name: "the target listed", harness: thisCluster, passes: []pass{
			{at: 25 * time.Hour, items: 1},
			{at: 49*time.Hour - time.Second, items: 1},
			{at: 49 * time.Hour, warning: "timeout 24h0m0s passed since deorbit's first pass, at 2026-03-15T13:00:00Z; debris left behind: 1 PVC (app/data)"},
		}},
		{name: "the target unreachable", harness: func(t *testing.T) *teardownHarness {
			return newRemoteTeardownHarness(t, `{"kubeConfigSecretRef":{"name":"target"},`+limits+`}`, func(string) int { return http.StatusServiceUnavailable })
		}, passes: []pass{
			{at: 25 * time.Hour},
			{at: 25*time.Hour + time.Minute},
			{at: 25*time.Hour + 2*time.Minute, warning: "the target was unreachable for 2m0s"},
		}},
		{name: "a state kept by an older limbo", state: `{"found":{"PVCs":1}}`, harness: thisCluster, passes: []pass{
			{at: 25 * time.Hour, warning: "timeout 24h0m0s passed since the Bundle's deletion; debris left behind: 1 PVC (app/data)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.harness(t)
			h.state = tc.state
			for _, p := range tc.passes {
				h.now = now.Add(p.at)
				res, _ := h.pass()
				gaveUp := slices.Contains(reasons(res.Events), "Warning DeorbitTimedOut")
				if res.Done != (p.warning != "") || gaveUp != (p.warning != "") || len(res.Items) != p.items || !strings.Contains(res.Warning, p.warning) {
					t.Fatalf("pass %v after the deletion: done %v, %d items, events %v, warning %q; want %d items, given up with %q",
						p.at, res.Done, len(res.Items), reasons(res.Events), res.Warning, p.items, p.warning)
				}
			}
		})
	}
}

// boundClaimObjects are a Bound claim of a CSI PV, and the PV.
func boundClaimObjects() []client.Object {
	claim := pvc("data", "pv-data", corev1.ClaimBound)
	return []client.Object{claim, pv("pv-data", cinder, true, claim, corev1.VolumeBound)}
}

// boundClaim is a target holding boundClaimObjects.
func boundClaim(t *testing.T) client.Reader { return fakeCluster(t, false, boundClaimObjects()...) }

// targetServer serves, over HTTP, the API of a target cluster holding objs (PVs,
// PVCs and Services): discovery of v1 (no API group, so no VolumeSnapshot CRD),
// the lists of PVs, PVCs and Services, its kube-system Namespace (UID
// targetClusterUID), and its version. answer overrides it per request path: a
// status to answer with (0: none), or hangs to hold the request until the client
// gives up.
func targetServer(t *testing.T, answer func(path string) int, objs ...client.Object) *httptest.Server {
	t.Helper()
	held := fakeCluster(t, false, objs...)
	listOf := func(ctx context.Context, l client.ObjectList, kind string) (any, error) {
		if err := held.List(ctx, l); err != nil {
			return nil, err
		}
		l.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
		return l, nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body any
		var err error
		switch code := answer(r.URL.Path); {
		case code == hangs:
			<-r.Context().Done()
			return
		case code != 0:
			w.WriteHeader(code)
			return
		}
		switch r.URL.Path {
		case "/version":
			body = map[string]string{"major": "1", "minor": "35", "gitVersion": "v1.35.0"}
		case "/api":
			body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case "/apis":
			body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		case "/api/v1":
			body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "namespaces", Kind: "Namespace", Verbs: metav1.Verbs{"get"}},
				{Name: "persistentvolumes", Kind: "PersistentVolume", Verbs: metav1.Verbs{"list"}},
				{Name: "persistentvolumeclaims", Namespaced: true, Kind: "PersistentVolumeClaim", Verbs: metav1.Verbs{"list"}},
				{Name: "services", Namespaced: true, Kind: "Service", Verbs: metav1.Verbs{"list"}},
			}}
		case "/api/v1/persistentvolumes":
			body, err = listOf(r.Context(), &corev1.PersistentVolumeList{}, "PersistentVolumeList")
		case "/api/v1/persistentvolumeclaims":
			body, err = listOf(r.Context(), &corev1.PersistentVolumeClaimList{}, "PersistentVolumeClaimList")
		case "/api/v1/services":
			body, err = listOf(r.Context(), &corev1.ServiceList{}, "ServiceList")
		case "/api/v1/namespaces/kube-system":
			body = corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: targetClusterUID}}
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hangs is targetServer's answer that holds a request until the client gives up.
const hangs = -1

// targetClusterUID is the UID of targetServer's kube-system Namespace.
const targetClusterUID = "target-cluster-uid"

// kubeconfigOf is a kubeconfig of srv, with a token.
func kubeconfigOf(srv *httptest.Server) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: target, cluster: {server: %q}}]
contexts: [{name: target, context: {cluster: target, user: deorbit}}]
users: [{name: deorbit, user: {token: secret}}]
current-context: target
`, srv.URL))
}

// A kubeconfig that reaches limbo's own cluster — the same kube-system
// Namespace UID through both — is refused, armed and at teardown alike,
// before anything of the target is listed, stamped or deleted: deorbit would
// have treated this cluster as another one, every namespace's claims included.
// When the UIDs differ, or a kube-system cannot be read at all (NotFound,
// Forbidden), the kubeconfig is used as before; any other failure to read the
// target's fails the pass, retried, rather than skip the check.
func TestTargetIsThisClusterRefused(t *testing.T) {
	for _, tc := range []struct {
		name       string
		localUID   types.UID // "": no kube-system Namespace here
		kubeSystem int       // the target's answer to the kube-system read (0: the Namespace)
		refused    string    // the error: "" for none
	}{
		{name: "the same cluster", localUID: targetClusterUID, refused: "reaches limbo's own cluster"},
		{name: "another cluster", localUID: "this-cluster-uid"},
		{name: "this cluster's identity unknown", localUID: ""},
		{name: "the target's identity may not read it", localUID: targetClusterUID, kubeSystem: http.StatusForbidden},
		{name: "the target's read failed: not skipped", localUID: targetClusterUID, kubeSystem: http.StatusInternalServerError,
			refused: "read the target's kube-system Namespace, to tell it from this cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var listed atomic.Int32
			srv := targetServer(t, func(path string) int {
				if strings.HasSuffix(path, "/persistentvolumeclaims") || strings.HasSuffix(path, "/services") {
					listed.Add(1)
				}
				if path == "/api/v1/namespaces/kube-system" {
					return tc.kubeSystem
				}
				return 0
			})
			objs := []client.Object{remotecluster.NewKubeconfigSecret("team", "target", kubeconfigOf(srv))}
			if tc.localUID != "" {
				objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: tc.localUID}})
			}
			local := fakeCluster(t, false, objs...)
			h := newTeardownHarness(t, `{"kubeConfigSecretRef":{"name":"target"},"volumeSnapshots":false}`, local)
			armed, planErr := h.plugin.Plan(context.Background(), plugin.Request{Bundle: h.bundle, Resource: "deorbit",
				Spec: h.bundle.Spec.Resources[0].Plugin.Spec.Raw, Reader: local, Now: now})
			res, err := h.pass()
			if tc.refused == "" {
				if planErr != nil || err != nil || !res.Done {
					t.Fatalf("armed: %v, %v; teardown: %+v, %v; want the target used", armed, planErr, res, err)
				}
				return
			}
			for what, err := range map[string]error{"armed": planErr, "teardown": err} {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("%s: %v; want an error containing %q", what, err, tc.refused)
				}
				var secretErr *remotecluster.Error
				if isRefusal := errors.As(err, &secretErr) && secretErr.Reason == remotecluster.ReasonThisCluster; isRefusal != (tc.localUID == targetClusterUID && tc.kubeSystem == 0) {
					t.Errorf("%s: %v; a %s refusal %v, want it only for the same cluster", what, err, remotecluster.ReasonThisCluster, isRefusal)
				}
			}
			if res.Done || len(res.Items) != 0 {
				t.Errorf("teardown: %+v; want nothing done", res)
			}
			if n := listed.Load(); n != 0 {
				t.Errorf("%d listings of the target's claims and Services, want none", n)
			}
		})
	}
}

// A target that answers some requests and times out another is slow, not
// unreachable: its passes fail and are retried (evented), never given up for
// apiUnavailableTimeout, only past timeout; also when the request that timed out
// was the pass's only one (VolumeSnapshots off, discovery cached) and the server
// answers its version. A target that answers nothing, or only that it is
// unavailable (503), is still given up after apiUnavailableTimeout.
func TestTeardownSlowTargetIsNotUnreachable(t *testing.T) {
	hanging := func(hung string) func(path string) int {
		return func(path string) int {
			if path == hung {
				return hangs
			}
			return 0
		}
	}
	for _, tc := range []struct {
		name        string
		snapshots   bool
		answer      func(path string) int
		unreachable bool
		failure     string // in every DeorbitFailed event
	}{
		{"a list times out, the others answer", true, hanging("/api/v1/services"), false, "answered, but a request timed out"},
		{"the pass's only request times out, its version answers", false, hanging("/api/v1/persistentvolumes"), false, "answered, but a request timed out"},
		{"nothing answers", true, func(string) int { return hangs }, true, "is unreachable"},
		{"every answer is 503", true, func(string) int { return http.StatusServiceUnavailable }, true, "is unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := targetServer(t, tc.answer)
			secrets := fakeCluster(t, false, remotecluster.NewKubeconfigSecret("team", "target", kubeconfigOf(srv)))
			h := newTeardownHarness(t, fmt.Sprintf(`{"kubeConfigSecretRef":{"name":"target"},"volumeSnapshots":%v,"apiUnavailableTimeout":"2m","timeout":"1h"}`, tc.snapshots), secrets)
			// Requests time out soon, so that a pass that waits for one is short.
			h.plugin.clusters = remotecluster.NewCache(remotecluster.Options{Timeout: 500 * time.Millisecond})

			var events []plugin.Event
			for _, at := range []time.Duration{0, time.Minute, 3 * time.Minute} {
				h.now = now.Add(at)
				res, err := h.pass()
				events = append(events, res.Events...)
				if res.Done {
					if tc.unreachable && at == 3*time.Minute && strings.Contains(res.Warning, "unreachable for 3m0s (apiUnavailableTimeout 2m0s)") {
						return
					}
					t.Fatalf("gave up %v after the deletion: %s (events %+v)", at, res.Warning, events)
				}
				if err == nil {
					t.Fatalf("pass %v after the deletion succeeded: %+v", at, res)
				}
				for _, e := range res.Events {
					if e.Reason != EventDeorbitFailed || !strings.Contains(e.Message, tc.failure) {
						t.Errorf("pass %v after the deletion: event %+v, want %s with %q", at, e, EventDeorbitFailed, tc.failure)
					}
				}
			}
			if tc.unreachable {
				t.Fatalf("not given up after 3m unreachable (apiUnavailableTimeout 2m); events %+v", events)
			}
			if len(events) == 0 {
				t.Errorf("failed passes evented nothing")
			}
			h.now = now.Add(time.Hour)
			if res, _ := h.pass(); !res.Done || !strings.Contains(res.Warning, "timeout 1h0m0s passed") {
				t.Errorf("past the timeout: %+v; want a give-up for the timeout", res)
			}
		})
	}
}

// The teardown state is an annotation of the Bundle, which whoever edits the
// Bundle may forge. One that does not read or does not validate (a count
// outside [0, maxFound], a first pass after this one, which would put the
// timeout off) is discarded with a DeorbitFailed event, and the
// deorbit starts over from a fresh inventory (what it deletes is always read
// from the target); a finished one stays finished. Never a panic.
func TestTeardownForgedState(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		discarded   bool
		done        string // the result's message, a prefix
		events      string
		kept        string // in the state kept after the pass
	}{
		{name: "a count past any slice", state: `{"found":{"VolumeSnapshots":9223372036854775807}}`, discarded: true,
			done: "deorbit done in 0s: nothing to remove", events: "Warning DeorbitFailed,Normal DeorbitDone"},
		{name: "a huge count", state: `{"found":{"PVCs":4611686018427387904}}`, discarded: true,
			done: "deorbit done in 0s: nothing to remove", events: "Warning DeorbitFailed,Normal DeorbitDone"},
		{name: "a negative count", state: `{"found":{"PVCs":-1}}`, discarded: true,
			done: "deorbit done in 0s: nothing to remove", events: "Warning DeorbitFailed,Normal DeorbitDone"},
		{name: "one past the bound", state: fmt.Sprintf(`{"found":{"PVCs":%d}}`, maxFound+1), discarded: true,
			done: "deorbit done in 0s: nothing to remove", events: "Warning DeorbitFailed,Normal DeorbitDone"},
		{name: "a count JSON cannot fit in an int", state: `{"found":{"PVCs":1e30}}`, discarded: true,
			done: "deorbit done in 0s: nothing to remove", events: "Warning DeorbitFailed,Normal DeorbitDone"},
		{name: "not JSON", state: `{"found":`, discarded: true,
			done: "deorbit done in 0s: nothing to remove", events: "Warning DeorbitFailed,Normal DeorbitDone"},
		{name: "the bound", state: fmt.Sprintf(`{"found":{"PVCs":%d}}`, maxFound),
			done: fmt.Sprintf("deorbit done in 0s: removed %d PVCs", maxFound), events: "Normal DeorbitDeleted,Normal DeorbitDone"},
		// Taken as this one (a replica's clock ahead of this one's, or
		// forged): the rest of the state is kept.
		{name: "a first pass after this one", state: `{"began":"2026-03-14T12:00:01Z","target":"this cluster","found":{"PVCs":2}}`,
			done: "deorbit done in 0s: removed 2 PVCs", events: "Normal DeorbitDeleted,Normal DeorbitDone"},
		{name: "a first pass at this one", state: `{"began":"2026-03-14T12:00:00Z"}`,
			done: "deorbit done in 0s: nothing to remove", events: "Normal DeorbitDone"},
		{name: "a valid state", state: `{"found":{"PVCs":2}}`,
			done: "deorbit done in 0s: removed 2 PVCs", events: "Normal DeorbitDeleted,Normal DeorbitDone"},
		{name: "finished, with a forged count", state: `{"finished":"deorbit done in 1m0s: removed 1 PVCs","found":{"PVCs":-7}}`, discarded: true,
			done: "deorbit done in 1m0s: removed 1 PVCs", events: "Warning DeorbitFailed", kept: `{"finished":"deorbit done in 1m0s: removed 1 PVCs"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTeardownHarness(t, `{}`, fakeCluster(t, false))
			h.state = tc.state
			res, err := h.pass()
			if err != nil || !res.Done || !strings.HasPrefix(res.Message, tc.done) || strings.Join(reasons(res.Events), ",") != tc.events {
				t.Fatalf("pass: done %v, message %q, events %v, err %v; want done %q, events %s", res.Done, res.Message, reasons(res.Events), err, tc.done, tc.events)
			}
			if got := res.Events[0].Message; tc.discarded != strings.Contains(got, "discarded the teardown state in annotation teardown.limbo.dev/deorbit") {
				t.Errorf("first event %q; discarded %v", got, tc.discarded)
			}
			if tc.kept != "" && res.State != tc.kept {
				t.Errorf("state kept %s, want %s", res.State, tc.kept)
			}
			if _, err := decodeState(res.State, h.now); err != nil {
				t.Errorf("the state kept does not validate: %v", err)
			}
			// The next pass repeats the end, and reports the discard no more.
			res, err = h.pass()
			if err != nil || !res.Done || len(res.Events) != 0 {
				t.Errorf("next pass: done %v, events %v, err %v", res.Done, reasons(res.Events), err)
			}
		})
	}
}

// A LoadBalancer Service's forged stamp at the end of year 9999 (its
// namespace's users may write it) never makes a state that cannot be kept: the
// load-balancer wait ends at the timeout at the latest, when the deorbit gives
// up anyway. A state that cannot be encoded is the pass's error, not a state
// silently dropped (which restarted the deorbit on every pass).
func TestTeardownStateTimes(t *testing.T) {
	lb := service("lb", corev1.ServiceTypeLoadBalancer)
	lb.Annotations = map[string]string{"limbo.dev/deletionTimestamp": "9999-12-31T23:59:59Z"}
	h := newTeardownHarness(t, `{"timeout":"24h"}`, fakeCluster(t, false, lb))
	for i := range 3 {
		h.now = now.Add(time.Duration(i) * time.Hour)
		res, err := h.pass()
		if err != nil || res.Done || res.State == "" {
			t.Fatalf("pass %d: state %q, done %v, err %v", i, res.State, res.Done, err)
		}
		st, err := decodeState(res.State, h.now)
		if err != nil || st.LoadBalancersUntil == nil || !st.LoadBalancersUntil.Equal(now.Add(24*time.Hour)) {
			t.Fatalf("pass %d: loadBalancersUntil %v (%v), want the timeout, %v", i, st.LoadBalancersUntil, err, now.Add(24*time.Hour))
		}
		if i > 0 && len(res.Events) != 0 {
			t.Errorf("pass %d: events %v again: the state was not kept", i, reasons(res.Events))
		}
	}
	h.now = now.Add(24 * time.Hour)
	if res, _ := h.pass(); !res.Done || !strings.Contains(res.Warning, "timeout 24h0m0s passed") {
		t.Errorf("at the timeout: %+v", res)
	}

	past := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		st   state
		err  string
	}{
		{"a time in year 9999", state{LoadBalancersUntil: ptr.To(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))}, ""},
		{"loadBalancersUntil past year 9999", state{LoadBalancersUntil: &past}, "encode the teardown state: json: error calling MarshalJSON for type *time.Time: Time.MarshalJSON: year outside of range [0,9999]"},
		{"unreachableSince past year 9999", state{UnreachableSince: &past}, "year outside of range [0,9999]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.st.encode()
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("encode: %v, want %q", err, tc.err)
			}
		})
	}

	// A pass whose state cannot be encoded fails, keeps the state it started
	// from, and hands nothing out: here a Bundle deleted a minute before year
	// 10000, whose LoadBalancer Service's wait ends past it.
	h = newTeardownHarness(t, `{}`, fakeCluster(t, false, service("lb", corev1.ServiceTypeLoadBalancer)))
	deleted := metav1.NewTime(past.Add(-time.Minute))
	h.bundle.DeletionTimestamp, h.now, h.state = &deleted, past, `{"found":{"PVCs":1}}`
	res, err := h.pass()
	if err == nil || !strings.Contains(err.Error(), "encode the teardown state") || res.State != `{"found":{"PVCs":1}}` || res.Done ||
		len(res.Items) != 0 || strings.Join(reasons(res.Events), ",") != "Warning DeorbitFailed" || !strings.Contains(res.Events[0].Message, "encode the teardown state") {
		t.Errorf("a state that cannot be encoded: %+v, %v", res, err)
	}
}

// Without a kubeConfigSecretRef the target is limbo's own cluster, whose API
// server the teardown's state is written to: a pass whose request to it fails
// or times out, however (refused, 503, a listing slower than the call under
// load, alone in its pass or beside requests that were answered), is retried
// until timeout, never counted unreachable and given up after
// apiUnavailableTimeout with its volumes and load balancers left behind.
func TestTeardownThisClusterIsNeverUnreachable(t *testing.T) {
	claim := pvc("data", "pv-data", corev1.ClaimBound)
	target := fakeCluster(t, false, claim, pv("pv-data", cinder, true, claim, corev1.VolumeBound))
	claimsTimeOut := interceptor.NewClient(target, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*corev1.PersistentVolumeClaimList); ok {
			return &url.Error{Op: "Get", URL: "https://10.96.0.1:443/api/v1/persistentvolumeclaims?limit=500", Err: context.DeadlineExceeded}
		}
		return c.List(ctx, list, opts...)
	}})
	for _, tc := range []struct {
		name   string
		reader client.Reader
		// callTimeout bounds each pass, as plugin.CallTimeout does; zero: none.
		callTimeout time.Duration
	}{
		{name: "a listing times out, the others answer", reader: claimsTimeOut},
		{name: "every request is refused", reader: errReader{&url.Error{Op: "Get", URL: "https://10.96.0.1:443/api", Err: syscall.ECONNREFUSED}}},
		{name: "every answer is 503", reader: errReader{apierrors.NewServiceUnavailable("the API server is shutting down")}},
		{name: "the first listing outlasts the call", reader: hangingReader{}, callTimeout: 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTeardownHarness(t, `{"apiUnavailableTimeout":"2m","timeout":"1h"}`, tc.reader)
			h.callTimeout = tc.callTimeout
			for _, at := range []time.Duration{0, time.Minute, 3 * time.Minute} {
				h.now = now.Add(at)
				res, err := h.pass()
				if res.Done {
					t.Fatalf("gave up %v after the deletion on this cluster: %s", at, res.Warning)
				}
				if err == nil || strings.Contains(err.Error(), "is unreachable") {
					t.Errorf("pass %v after the deletion: %v, want the request's failure, not unreachable", at, err)
				}
				for _, e := range res.Events {
					if e.Reason != EventDeorbitFailed {
						t.Errorf("pass %v after the deletion: event %+v, want %s only", at, e, EventDeorbitFailed)
					}
				}
			}
			for _, step := range []string{StepUnreachable, StepAPIUnavailable} {
				if got := testutil.ToFloat64(h.plugin.opts.Metrics.Failures.WithLabelValues(step)); got != 0 {
					t.Errorf("%s failures %v, want none on this cluster", step, got)
				}
			}
			h.now = now.Add(time.Hour)
			if res, _ := h.pass(); !res.Done || !strings.Contains(res.Warning, "timeout 1h0m0s passed") {
				t.Errorf("past the timeout: %+v; want a give-up for the timeout", res)
			}
		})
	}
}

// hangingReader holds every read until its context ends, as client-go's
// requests to an API server that does not answer in time.
type hangingReader struct{}

func (hangingReader) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return &url.Error{Op: "Get", URL: "https://10.96.0.1:443/api", Err: ctx.Err()}
}

func (hangingReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return &url.Error{Op: "Get", URL: "https://10.96.0.1:443/api", Err: ctx.Err()}
}

// A forged state with several bad counts is discarded with the same event text
// at every pass that meets it (a teardown whose state write failed meets it
// again): validate names the first bad count in key order, not in the order a
// map walk gives, so that the same input never makes a second, different
// Warning.
func TestTeardownForgedStateEventIsStable(t *testing.T) {
	const forged = `{"found":{"PVCs":-1,"LoadBalancer Services":-2,"VolumeSnapshots":-3,"PVs":-4}}`
	var first string
	for i := range 50 {
		h := newTeardownHarness(t, `{}`, fakeCluster(t, false))
		h.state = forged
		res, _ := h.pass()
		if len(res.Events) == 0 {
			t.Fatalf("pass %d: no event for a forged state", i)
		}
		got := res.Events[0].Message
		if i == 0 {
			first = got
			if !strings.Contains(got, `found["LoadBalancer Services"] = -2`) {
				t.Errorf("event %q does not name the first bad count in key order", got)
			}
			continue
		}
		if got != first {
			t.Fatalf("pass %d: the same forged state gave another event:\n%s\nthen:\n%s", i, first, got)
		}
	}
}

// Plan and Teardown on a world that does not change give the same result every
// time, items, message, events and kept state included: a Bundle's re-pass over
// it writes nothing. Teardown is called each time from one kept state, as a
// pass whose state write failed calls it again. The world has several PVs
// waiting for their provisioner (read through a map), claims and Services.
func TestCallsOnAnUnchangedWorldAreIdentical(t *testing.T) {
	var objs []client.Object
	for _, name := range []string{"d", "a", "c", "b"} {
		claim := pvc("data-"+name, "pv-"+name, corev1.ClaimBound)
		objs = append(objs, claim, pv("pv-"+name, cinder, true, claim, corev1.VolumeBound))
		gone := pvc("gone-"+name, "pv-gone-"+name, corev1.ClaimBound) // its PV Released, the claim gone
		objs = append(objs, pv("pv-gone-"+name, cinder, true, gone, corev1.VolumeReleased))
		objs = append(objs, service("lb-"+name, corev1.ServiceTypeLoadBalancer))
	}
	target := fakeCluster(t, true, append(objs, snapshot("snap-1"), snapshot("snap-2"))...)
	for _, tc := range []struct {
		name string
		call func(h *teardownHarness) (any, error)
	}{
		{name: "Plan", call: func(h *teardownHarness) (any, error) {
			return h.plugin.Plan(context.Background(), plugin.Request{Bundle: h.bundle, Resource: "deorbit",
				Spec: h.bundle.Spec.Resources[0].Plugin.Spec.Raw, Reader: h.reader, Now: h.now})
		}},
		{name: "Teardown, first pass", call: func(h *teardownHarness) (any, error) {
			h.state = ""
			return h.pass()
		}},
		{name: "Teardown, from a kept state", call: func(h *teardownHarness) (any, error) {
			h.state = `{"found":{"PVCs":6,"LoadBalancer Services":4},"waiting":{"PVs":true}}`
			return h.pass()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTeardownHarness(t, `{}`, target)
			first, err := tc.call(h)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				again, err := tc.call(h)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(again, first) {
					t.Fatalf("call %d on the same world differs:\n%+v\n%+v", i+2, first, again)
				}
			}
		})
	}
}

// A teardown acts on the cluster it began on only: a spec edited during the
// teardown to name another target (here a kubeconfig Secret, after this
// cluster; the other way round, a kubeConfigSecretRef removed, turned the
// deletions on every namespace of limbo's own cluster) fails each pass, as any
// failure, and nothing of the new target is listed or handed out.
func TestTeardownKeepsToTheClusterItBeganOn(t *testing.T) {
	var listed atomic.Int32
	srv := targetServer(t, func(path string) int {
		if strings.HasSuffix(path, "/persistentvolumeclaims") || strings.HasSuffix(path, "/services") {
			listed.Add(1)
		}
		return 0
	})
	claim := pvc("data", "pv-data", corev1.ClaimBound)
	local := fakeCluster(t, false, claim, pv("pv-data", cinder, true, claim, corev1.VolumeBound),
		remotecluster.NewKubeconfigSecret("team", "target", kubeconfigOf(srv)),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "this-cluster-uid"}})
	h := newTeardownHarness(t, `{"volumeSnapshots":false}`, local)
	if res, err := h.pass(); err != nil || res.Done || len(res.Items) != 1 {
		t.Fatalf("first pass, on this cluster: %+v, %v; want its claim handed out", res, err)
	}
	h.bundle.Spec.Resources[0].Plugin.Spec.Raw = []byte(`{"kubeConfigSecretRef":{"name":"target"},"volumeSnapshots":false}`)
	h.now = now.Add(time.Minute)
	res, err := h.pass()
	const want = "the target changed since the teardown began: it began on this cluster and is now the cluster whose kube-system Namespace has UID " + string(targetClusterUID)
	if err == nil || !strings.Contains(err.Error(), want) || res.Done || len(res.Items) != 0 {
		t.Errorf("pass after the edit: %+v, %v; want no items and an error containing %q", res, err, want)
	}
	if n := listed.Load(); n != 0 {
		t.Errorf("%d listings of the new target's claims and Services, want none", n)
	}
}

// A deletionDelay that is not shorter than timeout is refused while the Bundle
// lives: both run from the Bundle's deletion, and the teardown gave up before
// anything was due, deleting nothing.
func TestArmedRefusesADelayNotShorterThanTheTimeout(t *testing.T) {
	local := fakeCluster(t, false)
	for _, tc := range []struct {
		delay, spec string
		refused     bool
	}{
		{"24h", `{}`, true}, // the default timeout, 24h
		{"25h", `{"timeout":"24h"}`, true},
		{"1h", `{"timeout":"24h"}`, false},
		{"", `{}`, false},
	} {
		h := newTeardownHarness(t, tc.spec, local)
		h.bundle.Spec.Resources[0].Plugin.DeletionDelay = tc.delay
		_, err := h.plugin.Plan(context.Background(), plugin.Request{Bundle: h.bundle, Resource: "deorbit",
			Spec: h.bundle.Spec.Resources[0].Plugin.Spec.Raw, Reader: local, Now: now})
		if refused := err != nil && strings.Contains(err.Error(), "is not shorter than timeout"); refused != tc.refused {
			t.Errorf("delay %q, spec %s: Plan error %v, want refused %v", tc.delay, tc.spec, err, tc.refused)
		}
	}
}
