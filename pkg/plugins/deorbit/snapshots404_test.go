package deorbit

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// volumeSnapshotCRDObject is the CustomResourceDefinition that serves
// VolumeSnapshots, with versions (none: a CRD read for its existence only).
func volumeSnapshotCRDObject(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	u.SetName(volumeSnapshotCRD)
	var spec []any
	for _, v := range versions {
		spec = append(spec, map[string]any{"name": v.Name, "served": v.Served, "storage": v.Storage})
	}
	if spec != nil {
		if err := unstructured.SetNestedSlice(u.Object, spec, "spec", "versions"); err != nil {
			panic(err) // a test's own literal
		}
	}
	return u
}

// A 404 on the VolumeSnapshot listing is the CRD's end only when the CRD is gone:
// the API server answers 404 for a served custom resource for a moment at times
// (its storage restarting — in a dying cluster, likely). Taken for "not
// installed", it made deorbit count the stamped snapshots deleted, report
// DeorbitDone, and let the teardown go on, the snapshots left behind.
func TestTeardownSnapshotList404(t *testing.T) {
	for _, tc := range []struct {
		name     string
		crdGone  bool
		wantDone bool
	}{
		{name: "the CRD still there: an error, retried", crdGone: false, wantDone: false},
		{name: "the CRD gone: no snapshots", crdGone: true, wantDone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot("snap")
			snap.SetFinalizers([]string{"snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"})
			objs := []client.Object{snap}
			crd := volumeSnapshotCRDObject()
			if !tc.crdGone {
				objs = append(objs, crd)
			}
			target := fakeCluster(t, true, objs...)
			var fail404 atomic.Bool
			flaky := interceptor.NewClient(target, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if fail404.Load() && list.GetObjectKind().GroupVersionKind().Group == VolumeSnapshotGVK.Group {
					return apierrors.NewNotFound(schema.GroupResource{Group: VolumeSnapshotGVK.Group, Resource: "volumesnapshots"}, "")
				}
				return c.List(ctx, list, opts...)
			}})
			h := newTeardownHarness(t, `{}`, flaky)
			if res, err := h.pass(); err != nil || res.Done || len(res.Items) != 1 {
				t.Fatalf("first pass: %+v, %v; want the snapshot as an item", res, err)
			}
			fail404.Store(true)
			h.now = now.Add(2 * time.Minute)
			res, err := h.pass()
			if res.Done != tc.wantDone {
				t.Fatalf("second pass: done = %v (%q, %v), want %v", res.Done, res.Message, err, tc.wantDone)
			}
			if !tc.wantDone {
				if err == nil {
					t.Error("second pass: no error for a 404 while the CRD is there")
				}
				if slices.Contains(reasons(res.Events), "Normal "+EventDeorbitDeleted) {
					t.Errorf("events %q: the snapshot counted deleted", reasons(res.Events))
				}
			}
		})
	}
}
