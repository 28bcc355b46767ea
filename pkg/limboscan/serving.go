package limboscan

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Serving tells how discovery serves gvk's group and kind now, among the kinds
// of either scope that support list and verbs (a plugin's object items may be
// cluster-scoped, as csi-baremetal's Drives): exact, whether it lists gvk itself; as, the
// version it lists of gvk's group and kind (its preferred one: gvk itself, or
// another), empty when it lists none; known is false when discovery could not
// read gvk's group (an aggregated API down, or discovery failing altogether),
// so that it cannot tell. A 404 on a LIST is confirmed with it: the API server
// answers 404 for a served custom resource for a moment at times (its storage
// restarting, a CRD just added), which must not be taken for the kind's end.
func Serving(d Discovery, gvk schema.GroupVersionKind, verbs ...string) (exact bool, as schema.GroupVersionKind, known bool) {
	served, err := kinds(d, false, verbs...)
	failed, partial := FailedGroups(err)
	known = err == nil || partial && !slices.ContainsFunc(failed, func(gv schema.GroupVersion) bool { return gv.Group == gvk.Group })
	for _, k := range served {
		if k.Kind.GroupKind() == gvk.GroupKind() {
			as = k.Kind
			exact = exact || k.Kind == gvk
		}
	}
	return exact, as, known
}
