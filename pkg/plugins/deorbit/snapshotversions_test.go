package deorbit

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A VolumeSnapshot listing that finds no v1 VolumeSnapshots served (NoMatch) is
// "not installed" only when their CRD is gone: a CRD that serves only v1beta1
// (an external-snapshotter older than 4.0, in an old workload cluster) or sets
// v1 served: false made deorbit skip the snapshots, delete the claims and report
// DeorbitDone, the snapshots and their cloud snapshots left behind. The read
// fails instead, naming the versions the CRD serves, and a teardown pass hands
// nothing to the engine.
func TestListSnapshotsNotServedAsV1(t *testing.T) {
	version := func(name string, served bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: served}
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, volumeSnapshotCRD, nil)
	for _, tc := range []struct {
		name string
		crd  client.Object // nil: none
		// crdRead fails the CRD's read, if set.
		crdRead error
		// discovered are the versions of VolumeSnapshots the target's
		// RESTMapper finds served.
		discovered []string
		// skipped is the armed report of a CRD not installed; err, else, is in
		// the read's error.
		skipped, err string
	}{
		{name: "no CRD: skipped", skipped: "armed: 1 PVC, 0 LoadBalancer Services, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)"},
		{name: "no CRDs served at all: skipped", crdRead: &meta.NoKindMatchError{GroupKind: apiextensionsv1.Kind("CustomResourceDefinition"), SearchedVersions: []string{"v1"}},
			skipped: "armed: 1 PVC, 0 LoadBalancer Services, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)"},
		{name: "served as v1beta1 only", crd: volumeSnapshotCRDObject(version("v1beta1", true)),
			err: "list VolumeSnapshots: VolumeSnapshots are served as v1beta1, not v1 (CustomResourceDefinition volumesnapshots.snapshot.storage.k8s.io)"},
		{name: "v1 not served", crd: volumeSnapshotCRDObject(version("v1beta1", true), version("v1", false)),
			err: "list VolumeSnapshots: VolumeSnapshots are served as v1beta1, not v1 (CustomResourceDefinition volumesnapshots.snapshot.storage.k8s.io)"},
		{name: "no version served", crd: volumeSnapshotCRDObject(version("v1beta1", false), version("v1", false)),
			err: "list VolumeSnapshots: VolumeSnapshots are served in no version, not v1 (CustomResourceDefinition volumesnapshots.snapshot.storage.k8s.io)"},
		{name: "v1 served, not discovered yet", crd: volumeSnapshotCRDObject(version("v1", true)),
			err: "while its CustomResourceDefinition volumesnapshots.snapshot.storage.k8s.io exists and serves v1"},
		{name: "the CRD unreadable, its read refused for another reason", crdRead: apierrors.NewServiceUnavailable("etcd"),
			err: "the CustomResourceDefinition volumesnapshots.snapshot.storage.k8s.io could not be read to tell whether VolumeSnapshots are installed"},
		// An identity that may not read CRDs (a target without the snapshot
		// CRD never needed it): discovery tells.
		{name: "the CRD's read forbidden, no VolumeSnapshots discovered: skipped", crdRead: forbidden,
			skipped: "armed: 1 PVC, 0 LoadBalancer Services, VolumeSnapshots skipped (the VolumeSnapshot CRD is not installed)"},
		{name: "the CRD's read forbidden, VolumeSnapshots discovered as v1beta1", crdRead: forbidden, discovered: []string{"v1beta1"},
			err: "list VolumeSnapshots: VolumeSnapshots are served as v1beta1, not v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := pvc("data", "pv-data", corev1.ClaimBound)
			objs := []client.Object{claim, pv("pv-data", cinder, true, claim, corev1.VolumeBound)}
			if tc.crd != nil {
				objs = append(objs, tc.crd)
			}
			// No v1 VolumeSnapshots served: the listing is a NoMatch.
			cluster := fakeCluster(t, false, objs...)
			var versions []schema.GroupVersion // preferred first, as discovery orders them
			for _, v := range tc.discovered {
				versions = append(versions, schema.GroupVersion{Group: VolumeSnapshotGVK.Group, Version: v})
			}
			mapper := meta.NewDefaultRESTMapper(versions)
			for _, v := range tc.discovered {
				mapper.Add(VolumeSnapshotGVK.GroupKind().WithVersion(v), meta.RESTScopeNamespace)
			}
			target := interceptor.NewClient(withMapper{cluster, meta.MultiRESTMapper{cluster.RESTMapper(), mapper}}, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.crdRead != nil && key.Name == volumeSnapshotCRD {
						return tc.crdRead
					}
					return c.Get(ctx, key, obj, opts...)
				}})
			cfg, err := parse([]byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			c, err := list(context.Background(), target, cfg)
			if tc.skipped != "" {
				if err != nil || c.armed() != tc.skipped {
					t.Fatalf("list: %v; want the armed report %q", err, tc.skipped)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("list = %+v, %v; want an error containing %q", c, err, tc.err)
			}
			h := newTeardownHarness(t, `{}`, target)
			if res, err := h.pass(); err == nil || res.Done || len(res.Items) != 0 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("teardown pass: done %v, %d items, %v; want no items and an error containing %q", res.Done, len(res.Items), err, tc.err)
			}
		})
	}
}

// withMapper is a client whose RESTMapper is mapper: discovery as the test
// would have the target serve it.
type withMapper struct {
	client.WithWatch
	mapper meta.RESTMapper
}

func (c withMapper) RESTMapper() meta.RESTMapper { return c.mapper }
