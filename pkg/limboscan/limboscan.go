package limboscan

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/apiwarning"
	"github.com/limbo-dev/limbo/pkg/listpages"
)

// Discovery is what the scan needs of discovery: the resource types, each in
// its preferred version. discovery.DiscoveryInterface implements it.
type Discovery interface {
	ServerPreferredResources() ([]*metav1.APIResourceList, error)
}

// Kind is a kind that can hold objects in limbo: namespaced, as Kinds returns
// them, or, for a plugin's object items, cluster-scoped too (Serving).
type Kind struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// Kinds returns the namespaced resource types (not subresources) that support
// list and every verb of verbs, in their preferred version, sorted by group,
// version and resource. When discovery fails for some API groups only (an
// unavailable aggregated API: the error is a *discovery.ErrGroupDiscoveryFailed
// naming them), Kinds returns the kinds of the other groups and that error, so
// that the caller can scan what is there and say what is missing.
func Kinds(d Discovery, verbs ...string) ([]Kind, error) {
	return kinds(d, true, verbs...)
}

// kinds is Kinds, of every scope unless namespacedOnly.
func kinds(d Discovery, namespacedOnly bool, verbs ...string) ([]Kind, error) {
	lists, err := d.ServerPreferredResources()
	need := append([]string{"list"}, verbs...)
	var kinds []Kind
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, parseErr := schema.ParseGroupVersion(list.GroupVersion)
		if parseErr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if namespacedOnly && !r.Namespaced || strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, need) {
				continue
			}
			kinds = append(kinds, Kind{Resource: gv.WithResource(r.Name), Kind: gv.WithKind(r.Kind)})
		}
	}
	slices.SortFunc(kinds, func(a, b Kind) int { return strings.Compare(a.Resource.String(), b.Resource.String()) })
	return slices.CompactFunc(kinds, func(a, b Kind) bool { return a.Resource == b.Resource }), err
}

func hasVerbs(have metav1.Verbs, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Namespaces are the namespaces a scan lists: namespaces, or every namespace
// ("") when there are none (a controller not restricted by --namespaces).
func Namespaces(namespaces []string) []string {
	if len(namespaces) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return namespaces
}

// MetadataList is an empty list of gvk's objects, metadata only: what a LIST
// straight from the API server reads into when only names, labels,
// annotations and owners matter.
func MetadataList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return list
}

// Holds reports whether namespace ("" is every namespace) holds an object of
// kind gvk that selector selects: one metadata-only LIST of at most one object.
// The reader must list straight from the API server, as for List. Like List, it
// drops the API server's warnings (a deprecated kind): a scan only looks.
func Holds(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) (bool, error) {
	list := MetadataList(gvk)
	if err := r.List(apiwarning.Quiet(ctx), list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}, client.Limit(1)); err != nil {
		return false, err
	}
	return len(list.Items) > 0, nil
}

// NotEndpointCopies are the requirements that leave out the Endpoints and
// EndpointSlices Kubernetes' endpoint controllers make for a Service: they copy
// the Service's labels, limbo.dev/bundle and limbo.dev/pending-deletion
// included, and are not a Bundle's objects. Selected, they were listed in
// limbo under the Bundle's name (kubectl limbo pending: "deleted without
// delay", due now), had countdowns "cancelled" that limbo never started, and,
// watched after every start, each endpoint change ran a pass of the Service's
// Bundle. Their controllers mark them with a managed-by label of their own
// name; an EndpointSlice a Bundle declares does not carry those names.
func NotEndpointCopies() []labels.Requirement {
	must := func(r *labels.Requirement, err error) labels.Requirement {
		if err != nil {
			panic(err) // constant, valid requirements
		}
		return *r
	}
	return []labels.Requirement{
		must(labels.NewRequirement("endpointslice.kubernetes.io/managed-by", selection.NotIn,
			[]string{"endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io"})),
		must(labels.NewRequirement("endpoints.kubernetes.io/managed-by", selection.NotIn, []string{"endpoint-controller"})),
	}
}

// List returns the metadata of the objects of kind gvk in namespace (""
// is every namespace) that are labelled limbo.dev/pending-deletion=true, and
// that within selects (nil: all), each with its GroupVersionKind set. The reader
// must list straight from the API server (a manager's APIReader, or a plain
// client): a cached reader would start an informer for every kind. The API
// server's warnings about the kind are dropped (see package apiwarning): the
// scans list every kind, used or not. opts add to the list's options (a
// resourceVersion to read from the watch cache; a client.Limit, to read page by
// page: listpages.Each). What the selectors do not match is dropped here too: an
// aggregated API may ignore a label selector, and an object listed as in limbo
// may be deleted.
func List(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, namespace string, within labels.Selector, opts ...client.ListOption) ([]metav1.PartialObjectMetadata, error) {
	inLimbo := labels.SelectorFromSet(labels.Set{limbov1alpha1.LabelPendingDeletion: "true"}).Add(NotEndpointCopies()...)
	if within != nil {
		if reqs, selectable := within.Requirements(); selectable {
			inLimbo = inLimbo.Add(reqs...)
		}
	}
	var items []metav1.PartialObjectMetadata
	err := listpages.Each(apiwarning.Quiet(ctx), r, func() *metav1.PartialObjectMetadataList { return MetadataList(gvk) },
		func(page *metav1.PartialObjectMetadataList) {
			for _, item := range page.Items {
				if inLimbo.Matches(labels.Set(item.Labels)) {
					item.SetGroupVersionKind(gvk)
					items = append(items, item)
				}
			}
		}, append([]client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: inLimbo}}, opts...)...)
	if err != nil {
		return nil, err
	}
	return items, nil
}
