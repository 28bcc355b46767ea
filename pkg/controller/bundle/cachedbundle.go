package bundle

import (
	"slices"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/sharedmeta"
)

// NewBundleCacheTransform returns the cache's transform for Bundles. A cached
// Bundle is mostly its templates and its status; the transform drops its
// managedFields, sizes its lists to their length (the decoder grows them by
// doubling, up to twice the memory they need), and has the strings that many
// Bundles repeat (states, kinds, namespaces, condition reasons and messages,
// resource names) held once, through shared. About a quarter of a cached
// Bundle's memory; the content is unchanged.
func NewBundleCacheTransform(shared *sharedmeta.Table) func(any) (any, error) {
	return func(in any) (any, error) {
		b, ok := in.(*limbov1alpha1.Bundle)
		if !ok {
			return in, nil
		}
		b.ManagedFields = nil
		shared.Share(&b.ObjectMeta)
		compactBundle(b, shared)
		return b, nil
	}
}

func compactBundle(b *limbov1alpha1.Bundle, shared *sharedmeta.Table) {
	spec, st := &b.Spec, &b.Status
	spec.Resources = fit(spec.Resources)
	for i := range spec.Resources {
		r := &spec.Resources[i]
		shared.Strings(&r.Name)
		r.References = fit(r.References)
	}
	st.Conditions = fit(st.Conditions)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		shared.Strings(&c.Type, (*string)(&c.Status), &c.Reason, &c.Message)
	}
	st.Resources = fit(st.Resources)
	for i := range st.Resources {
		r := &st.Resources[i]
		shared.Strings(&r.Name, (*string)(&r.State), &r.Reason, &r.Message)
		if o := r.Object; o != nil {
			shared.Strings(&o.APIVersion, &o.Kind, &o.Namespace)
		}
	}
	st.PendingDeletions = fit(st.PendingDeletions)
	for i := range st.PendingDeletions {
		pd := &st.PendingDeletions[i]
		shared.Strings(&pd.APIVersion, &pd.Kind, &pd.Namespace, &pd.Cluster, &pd.Resource, &pd.Message)
	}
	st.ManagedKinds = fit(st.ManagedKinds)
	for i := range st.ManagedKinds {
		k := &st.ManagedKinds[i]
		shared.Strings(&k.APIVersion, &k.Kind)
	}
}

// fit returns s, or a copy of it without unused capacity if it has some.
func fit[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	return slices.Clone(s)
}
