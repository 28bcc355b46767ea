package deorbit

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/listpages"
	"github.com/limbo-dev/limbo/pkg/plugin"
	"github.com/limbo-dev/limbo/pkg/restmappings"
)

// The kinds deorbit removes, and the marks it reads.
var (
	// VolumeSnapshotGVK is the external-snapshotter's kind (its CRD may be absent).
	VolumeSnapshotGVK = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshot"}
	claimGVK          = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	serviceGVK        = corev1.SchemeGroupVersion.WithKind("Service")
)

const (
	// AnnotationProvisionedBy is what a dynamic provisioner (a CSI driver's
	// external-provisioner) writes on the PVs it creates: its name, the driver's.
	// A PV without it was made by hand and is never deorbit's.
	AnnotationProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnotationMigratedTo is on an in-tree PV (spec.cinder) once CSI migration
	// hands it to a CSI driver: the driver's name. The PV keeps its in-tree
	// source and its in-tree provisioned-by (kubernetes.io/cinder).
	AnnotationMigratedTo = "pv.kubernetes.io/migrated-to"
	// FinalizerLoadBalancerCleanup is the cloud controller's finalizer on a
	// LoadBalancer Service: the Service goes once its load balancer is gone.
	FinalizerLoadBalancerCleanup = "service.kubernetes.io/load-balancer-cleanup"
)

// contents is what deorbit finds in its target.
type contents struct {
	snapshots []*unstructured.Unstructured
	// snapshotsSkipped says why VolumeSnapshots were not looked at, if they were not.
	snapshotsSkipped string
	claims           []*corev1.PersistentVolumeClaim
	services         []*corev1.Service
	// volumes are the PVs to wait for: provisioned by a listed driver, their claim
	// gone or going, not Failed, with reclaim policy Delete (a Retain PV stays by
	// its owner's choice).
	volumes []*corev1.PersistentVolume
}

// volumeSnapshotCRD names the CustomResourceDefinition that serves VolumeSnapshots.
const volumeSnapshotCRD = "volumesnapshots.snapshot.storage.k8s.io"

// snapshotsAbsent is notServed, the VolumeSnapshot listing's 404 or NoMatch,
// when the CRD that serves them is gone; otherwise an error that is neither. The
// API server answers 404 for a served custom resource for a moment at times (its
// storage restarting, in a dying cluster likely): taken for "not installed", the
// snapshots a teardown stamped counted as deleted, deorbit reported done, and
// they stayed. A NoMatch says only that no v1 VolumeSnapshots are served: a CRD
// that serves v1beta1 alone (an external-snapshotter older than 4.0, in an old
// workload cluster) or sets v1 served: false still holds snapshots, and taken
// for "not installed" they were skipped, the claims deleted and DeorbitDone
// reported while the snapshots, and their cloud snapshots, stayed.
func snapshotsAbsent(ctx context.Context, r client.Reader, notServed error) error {
	// Unstructured: a remote target's client knows client-go's kinds only.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	switch err := r.Get(ctx, client.ObjectKey{Name: volumeSnapshotCRD}, u); {
	case restmappings.NotServed(err): // the CRD gone, or no CRDs served at all
		return notServed
	case err != nil && apierrors.IsForbidden(err) && meta.IsNoMatchError(notServed):
		// An identity that may not read CRDs (the docs ask for it, but a
		// target without the snapshot CRD never needed it before): the
		// client's discovery tells which versions are served, if any.
		if served, ok := discoveredVersions(r); ok {
			if len(served) == 0 {
				return notServed
			}
			return notServedAsV1(served)
		}
		fallthrough
	case err != nil:
		return fmt.Errorf("%v, and the CustomResourceDefinition %s could not be read to tell whether VolumeSnapshots are installed: %w", notServed, volumeSnapshotCRD, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return fmt.Errorf("%v, and the CustomResourceDefinition %s does not read: %w", notServed, volumeSnapshotCRD, err)
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	switch {
	case apierrors.IsNotFound(notServed):
		return fmt.Errorf("answered 404 while its CustomResourceDefinition %s exists (its storage restarting?): retried", volumeSnapshotCRD)
	case slices.Contains(served, VolumeSnapshotGVK.Version):
		// Discovery lags a CRD just created or edited.
		return fmt.Errorf("%v while its CustomResourceDefinition %s exists and serves %s (being established?): retried", notServed, volumeSnapshotCRD, VolumeSnapshotGVK.Version)
	}
	return notServedAsV1(served)
}

// notServedAsV1 is the error of VolumeSnapshots served as the versions served
// (maybe none), and not as v1.
func notServedAsV1(served []string) error {
	versions := "in no version"
	if len(served) > 0 {
		versions = "as " + strings.Join(served, ", ")
	}
	return fmt.Errorf("VolumeSnapshots are served %[1]s, not %[2]s (CustomResourceDefinition %[3]s): deorbit deletes %[2]s VolumeSnapshots only, and skips them only when their CRD is absent; "+
		"upgrade the snapshot CRDs to serve %[2]s (external-snapshotter 4.0 or later), or set volumeSnapshots: false to leave the snapshots behind",
		versions, VolumeSnapshotGVK.Version, volumeSnapshotCRD)
}

// discoveredVersions is the versions of VolumeSnapshots that r's RESTMapper
// (the API server's discovery) finds served; ok is false when r has none to ask
// or it could not tell.
func discoveredVersions(r client.Reader) (served []string, ok bool) {
	m, has := r.(interface{ RESTMapper() meta.RESTMapper })
	if !has {
		return nil, false
	}
	mappings, err := m.RESTMapper().RESTMappings(VolumeSnapshotGVK.GroupKind())
	switch {
	case meta.IsNoMatchError(err):
		return nil, true
	case err != nil:
		return nil, false
	}
	for _, mapping := range mappings {
		served = append(served, mapping.GroupVersionKind.Version)
	}
	return served, true
}

// list reads the target's contents from its API server: VolumeSnapshots (unless
// skipped), PVs, PVCs and Services. Any failed listing fails it: a partial
// inventory is never acted on.
func list(ctx context.Context, r client.Reader, cfg config) (*contents, error) {
	c := &contents{}
	if !cfg.snapshots {
		c.snapshotsSkipped = "volumeSnapshots: false"
	} else {
		err := listPaged(ctx, r, func() *unstructured.UnstructuredList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(VolumeSnapshotGVK.GroupVersion().WithKind("VolumeSnapshotList"))
			return l
		}, func(l *unstructured.UnstructuredList) {
			for i := range l.Items {
				l.Items[i].SetGroupVersionKind(VolumeSnapshotGVK)
				c.snapshots = append(c.snapshots, &l.Items[i])
			}
		})
		if restmappings.NotServed(err) {
			err = snapshotsAbsent(ctx, r, err)
		}
		switch {
		case restmappings.NotServed(err):
			c.snapshots, c.snapshotsSkipped = nil, "the VolumeSnapshot CRD is not installed"
		case err != nil:
			return nil, fmt.Errorf("list VolumeSnapshots: %w", err)
		}
	}
	var pvs []corev1.PersistentVolume
	if err := listPaged(ctx, r, func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} },
		func(l *corev1.PersistentVolumeList) { pvs = append(pvs, l.Items...) }); err != nil {
		return nil, fmt.Errorf("list PersistentVolumes: %w", err)
	}
	var pvcs []corev1.PersistentVolumeClaim
	if err := listPaged(ctx, r, func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} },
		func(l *corev1.PersistentVolumeClaimList) { pvcs = append(pvcs, l.Items...) }); err != nil {
		return nil, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	var services []corev1.Service
	if err := listPaged(ctx, r, func() *corev1.ServiceList { return &corev1.ServiceList{} },
		func(l *corev1.ServiceList) { services = append(services, l.Items...) }); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	ours := map[string]*corev1.PersistentVolume{}
	for i := range pvs {
		if pv := &pvs[i]; cfg.provisioned(pv) {
			ours[pv.Name] = pv
		}
	}
	liveClaims := map[types.UID]bool{}
	for i := range pvcs {
		pvc := &pvcs[i]
		if pvc.DeletionTimestamp == nil {
			liveClaims[pvc.UID] = true
		}
		// Bound claims of our PVs; a terminating one stays listed until it is gone.
		if pvc.Spec.VolumeName != "" && ours[pvc.Spec.VolumeName] != nil && (pvc.Status.Phase == corev1.ClaimBound || pvc.DeletionTimestamp != nil) {
			pvc.SetGroupVersionKind(claimGVK)
			c.claims = append(c.claims, pvc)
		}
	}
	for i := range services {
		if svc := &services[i]; svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			svc.SetGroupVersionKind(serviceGVK)
			c.services = append(c.services, svc)
		}
	}
	for _, pv := range ours {
		ref := pv.Spec.ClaimRef
		if ref == nil || pv.Status.Phase == corev1.VolumeFailed || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		if !liveClaims[ref.UID] {
			c.volumes = append(c.volumes, pv)
		}
	}
	sort.Slice(c.volumes, func(i, j int) bool { return c.volumes[i].Name < c.volumes[j].Name })
	return c, nil
}

// listPageSize is the most items one answer of a listing holds: a cluster's
// thousands of claims or Services come in pages, each far within an answer's
// bound (responselimit.MaxBody) and easy on the target's API server.
const listPageSize = 500

// listPaged lists all of a kind page by page, handing each page to add.
func listPaged[L client.ObjectList](ctx context.Context, r client.Reader, newPage func() L, add func(L)) error {
	return listpages.Each(ctx, r, newPage, add, client.Limit(listPageSize))
}

// provisioned reports whether pv is deorbit's: a volume that a listed CSI driver
// (any, when the list is empty) provisioned, or an in-tree volume dynamically
// provisioned before CSI migration whose driver is now a listed one
// (AnnotationMigratedTo: the driver deletes it as its own; a cluster upgraded from
// in-tree Cinder holds many). NFS, hand-made and unmigrated in-tree PVs are not.
func (cfg config) provisioned(pv *corev1.PersistentVolume) bool {
	var driver string
	switch {
	case pv.Spec.CSI != nil && pv.Annotations[AnnotationProvisionedBy] == pv.Spec.CSI.Driver:
		driver = pv.Spec.CSI.Driver
	case pv.Spec.CSI == nil && pv.Annotations[AnnotationProvisionedBy] != "":
		driver = pv.Annotations[AnnotationMigratedTo]
	}
	if driver == "" {
		return false
	}
	return len(cfg.Provisioners) == 0 || slices.Contains(cfg.Provisioners, driver)
}

// Groups of the items: one per kind, so that one kind's trouble never holds
// another's deletes; VolumeSnapshots sort first (the engine goes group by group).
const (
	groupSnapshots = "1-VolumeSnapshots"
	groupClaims    = "2-PersistentVolumeClaims"
	groupServices  = "3-Services"
)

// items are the contents to delete, as the engine's object items (all orphans).
func (c *contents) items() []plugin.ObjectItem {
	var out []plugin.ObjectItem
	for _, s := range c.snapshots {
		out = append(out, plugin.ObjectItem{Object: s, Group: groupSnapshots})
	}
	for _, pvc := range c.claims {
		out = append(out, plugin.ObjectItem{Object: pvc, Group: groupClaims})
	}
	for _, svc := range c.services {
		out = append(out, plugin.ObjectItem{Object: svc, Group: groupServices})
	}
	return out
}

// kind is one kind of deorbit's work, for counts, messages and events.
type kind struct {
	singular, plural string
	names            []string
}

func (k kind) count() string { return countOf(len(k.names), k.singular, k.plural) }

// countOf is "1 PVC", "3 PVCs".
func countOf(n int, singular, plural string) string {
	if n == 1 {
		return "1 " + singular
	}
	return fmt.Sprintf("%d %s", n, plural)
}

// describe is "2 PVCs (a/x, b/y)", or "" when there are none.
func (k kind) describe() string {
	if len(k.names) == 0 {
		return ""
	}
	const shown = 5
	names := k.names
	more := ""
	if len(names) > shown {
		names, more = names[:shown], fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return fmt.Sprintf("%s (%s%s)", k.count(), strings.Join(names, ", "), more)
}

// Kind keys, in the order messages list them.
const (
	kindClaims    = "PVCs"
	kindServices  = "LoadBalancer Services"
	kindSnapshots = "VolumeSnapshots"
	kindVolumes   = "PVs"
)

var kindOrder = []string{kindClaims, kindServices, kindSnapshots, kindVolumes}

// kinds are the contents by kind key.
func (c *contents) kinds() map[string]kind {
	out := map[string]kind{
		kindClaims:    {singular: "PVC", plural: "PVCs"},
		kindServices:  {singular: "LoadBalancer Service", plural: "LoadBalancer Services"},
		kindSnapshots: {singular: "VolumeSnapshot", plural: "VolumeSnapshots"},
		kindVolumes:   {singular: "PV", plural: "PVs"},
	}
	add := func(key string, obj client.Object) {
		k := out[key]
		name := obj.GetName()
		if obj.GetNamespace() != "" {
			name = obj.GetNamespace() + "/" + name
		}
		k.names = append(k.names, name)
		out[key] = k
	}
	for _, s := range c.snapshots {
		add(kindSnapshots, s)
	}
	for _, pvc := range c.claims {
		add(kindClaims, pvc)
	}
	for _, svc := range c.services {
		add(kindServices, svc)
	}
	for _, pv := range c.volumes {
		add(kindVolumes, pv)
	}
	return out
}

// armed is the armed report: "armed: 3 PVCs, 1 LoadBalancer Service, 2
// VolumeSnapshots".
func (c *contents) armed() string {
	k := c.kinds()
	msg := "armed: " + k[kindClaims].count() + ", " + k[kindServices].count()
	if c.snapshotsSkipped != "" {
		return msg + ", VolumeSnapshots skipped (" + c.snapshotsSkipped + ")"
	}
	return msg + ", " + k[kindSnapshots].count()
}

// debris describes everything still there, kind by kind: "2 PVCs (a/x, b/y); 1
// PV (pvc-1)"; "" when nothing is.
func (c *contents) debris() string {
	k := c.kinds()
	var parts []string
	for _, key := range kindOrder {
		if d := k[key].describe(); d != "" {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, "; ")
}
