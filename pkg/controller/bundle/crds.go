package bundle

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
)

// The reconciler reads CRDs for two things: the readiness rule a CRD states in
// its annotations (readinessRule), and whether a kind a Bundle names is about
// to be served (a CRD created with the Bundle: kindComing, bundlesNamingKindOf).

// TrimCRDForCache is the CRD cache's transform: it keeps what limbo reads — the
// metadata but managedFields and kubectl's last-applied copy, the group, names,
// the versions' names and whether they are served, and the status — and drops
// the schemas, columns and conversion settings, which are most of a CRD's size
// (hundreds of KB for some operators' kinds, and a cluster may have hundreds).
func TrimCRDForCache(in any) (any, error) {
	crd, ok := in.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return in, nil
	}
	crd.ManagedFields = nil
	if _, ok := crd.Annotations[lastAppliedAnnotation]; ok {
		annotations := make(map[string]string, len(crd.Annotations)-1)
		for k, v := range crd.Annotations {
			if k != lastAppliedAnnotation {
				annotations[k] = v
			}
		}
		crd.Annotations = annotations
	}
	crd.Spec.Conversion = nil
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		v.Schema, v.Subresources, v.AdditionalPrinterColumns, v.SelectableFields = nil, nil, nil, nil
	}
	return crd, nil
}

// lastAppliedAnnotation is where kubectl apply keeps a whole copy of the object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// crdServing passes the events of a CRD that starts serving a kind or version:
// it is established now and was not before, or serves other versions than
// before. The CRDs listed at the start are not passed: every Bundle gets a
// pass at the start anyway.
var crdServing = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList && established(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return established(e.ObjectNew) && (!established(e.ObjectOld) || servedVersions(e.ObjectOld) != servedVersions(e.ObjectNew))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// crdStopsServing passes the events of a CRD that stops serving a kind or a
// version: deleted (its objects went with it), or serving a version no more.
var crdStopsServing = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		now := strings.Split(servedVersions(e.ObjectNew), ",")
		for _, v := range strings.Split(servedVersions(e.ObjectOld), ",") {
			if v != "" && !slices.Contains(now, v) {
				return true
			}
		}
		return false
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func established(obj client.Object) bool {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return false
	}
	return establishedSince(crd) != nil
}

// establishedSince is when crd became established, or nil if it is not.
func establishedSince(crd *apiextensionsv1.CustomResourceDefinition) *metav1.Time {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return &c.LastTransitionTime
		}
	}
	return nil
}

// servedVersions lists the versions obj, a CRD, serves.
func servedVersions(obj client.Object) string {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return ""
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	return strings.Join(served, ",")
}

// bundlesNamingKindOf maps the event of a CRD that starts serving a kind to
// the Bundles whose templates name the kind: a Bundle created with its CRD
// (Helm, Flux, kubectl apply -f dir/) found it unknown — a spec error that no
// retry fixes — and would wait for the resync. Bundles are matched on their
// spec, not on a status that says UnknownKind: that status may not be in the
// cache yet when the CRD's event comes. A pass of a Bundle that was fine
// already changes nothing.
func (r *Reconciler) bundlesNamingKindOf(ctx context.Context, obj client.Object) []reconcile.Request {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil
	}
	r.crdsServing.seen(crd.Name, r.Clock.Now())
	return r.bundlesNaming(ctx, crdKind(crd))
}

// kindGone maps the event of a CRD that stops serving a kind or a version to
// the Bundles whose templates name the kind, after forgetting what limbo knew
// of the kind: the REST mapper maps it still (it only ever adds to what it
// discovered), and its informer keeps the objects it last saw — gone with the
// CRD — and retries its watch, with a growing wait, for good; a CRD installed
// again meanwhile had its objects created and deleted unseen, and a Bundle
// stayed Ready for an object that was gone. Forgotten, a kind no longer served
// is unknown to the next pass (UnknownKind, as a kind never installed), and one
// served again is discovered and watched afresh.
func (r *Reconciler) kindGone(ctx context.Context, obj client.Object) []reconcile.Request {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil
	}
	gk := crdKind(crd)
	if m, ok := r.Mapper.(meta.ResettableRESTMapper); ok {
		m.Reset()
	}
	r.watcher.forget(ctx, gk)
	log.FromContext(ctx).Info("a CRD stopped serving a kind: its mappings and watches are forgotten", "crd", crd.Name, "kind", gk.String())
	return r.bundlesNaming(ctx, gk)
}

func crdKind(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupKind {
	return schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
}

// bundlesNaming lists the Bundles whose templates name a kind of gk.
func (r *Reconciler) bundlesNaming(ctx context.Context, gk schema.GroupKind) []reconcile.Request {
	var bundles limbov1alpha1.BundleList
	if err := r.Client.List(ctx, &bundles, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list Bundles to pass again for a CRD change", "kind", gk.String())
		return nil
	}
	var out []reconcile.Request
	for i := range bundles.Items {
		b := &bundles.Items[i]
		for _, res := range b.Spec.Resources {
			if gvk, ok := objectKind(res); ok && gvk.GroupKind() == gk {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
				break
			}
		}
	}
	return out
}

// kindComingWindow is how long after a CRD started serving a kind a Bundle
// that names the kind is passed again every kindComingRetry while discovery does
// not serve it yet. Discovery catches up within seconds; a kind still unknown
// after that is a spec error like any other (the resync, or a CRD change, passes
// the Bundle again).
const (
	kindComingWindow = time.Minute
	kindComingRetry  = time.Second
)

// kindComing reports whether a kind that b's spec errors call unknown is served
// by a CRD that started serving it less than kindComingWindow ago: the API
// server's discovery serves a new CRD's kind (or version) a moment after the CRD
// says so, and the pass that the CRD's event triggered may come before.
func (r *Reconciler) kindComing(ctx context.Context, b *limbov1alpha1.Bundle, errs bundlespec.Errors) bool {
	var crds apiextensionsv1.CustomResourceDefinitionList
	now := r.Clock.Now()
	for _, e := range errs {
		if e.Reason != limbov1alpha1.ReasonUnknownKind {
			continue
		}
		gvk, ok := templateKind(b, e.Resource)
		if !ok {
			continue
		}
		if crds.Items == nil {
			if err := r.Client.List(ctx, &crds, client.UnsafeDisableDeepCopy); err != nil {
				return false
			}
		}
		for i := range crds.Items {
			crd := &crds.Items[i]
			if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind || !strings.Contains(","+servedVersions(crd)+",", ","+gvk.Version+",") {
				continue
			}
			since := establishedSince(crd)
			if since == nil {
				continue
			}
			if now.Sub(r.crdsServing.since(crd.Name, since.Time)) < kindComingWindow {
				return true
			}
		}
	}
	return false
}

// crdsServing remembers when this process saw CRDs start serving a kind or a
// version (an Established condition's time says when a CRD was established, not
// when it started serving a version added later).
type crdsServing struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (c *crdsServing) seen(name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[string]time.Time{}
	}
	// A time older than kindComingWindow tells since's callers nothing any
	// more: forgotten, or every CRD ever changed would stay for good.
	maps.DeleteFunc(c.at, func(_ string, t time.Time) bool { return at.Sub(t) > kindComingWindow })
	c.at[name] = at
}

// since is the later of established and when name was last seen to start
// serving something.
func (c *crdsServing) since(name string, established time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.at[name]; t.After(established) {
		return t
	}
	return established
}

// templateKind is the kind of the template of b's resource named resource.
func templateKind(b *limbov1alpha1.Bundle, resource string) (schema.GroupVersionKind, bool) {
	for _, res := range b.Spec.Resources {
		if res.Name == resource {
			return objectKind(res)
		}
	}
	return schema.GroupVersionKind{}, false
}

// objectKind is the kind of res's template; false for a plugin resource or a
// template that does not decode.
func objectKind(res limbov1alpha1.Resource) (schema.GroupVersionKind, bool) {
	h, ok, err := bundlespec.HeaderOf(res)
	return h.GVK, ok && err == nil
}
