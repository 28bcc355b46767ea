package main

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/bundlespec"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// reaperHold is why the reaper does not delete a released object now: a Bundle
// decides it rather than the reaper.
type reaperHold struct {
	// Bundle is the name of the Bundle that holds the object, in its namespace.
	Bundle string
	// Why says how, for example "Bundle b declares it to adopt it
	// (limbo.dev/adopt); deleted only once no Bundle does", for a pending row's
	// MESSAGE or expedite's output.
	Why string
}

// bundleIndex is a listing of Bundles indexed for what is asked of each object
// in limbo: the Bundles of its namespace, the one its label names, whether the
// one that controls it is being torn down. pending -A has the Bundles of every
// namespace, and a copy or a scan of the listing for each object made it cost
// objects × Bundles (6.3 ms an object at 10k Bundles).
type bundleIndex struct {
	// inNamespace holds the Bundles of each namespace in the listing's order:
	// the first that declares an object to adopt it is its adopter
	// (bundlespec.Adopter).
	inNamespace map[string][]limbov1alpha1.Bundle
	// byKey points into inNamespace.
	byKey map[client.ObjectKey]*limbov1alpha1.Bundle
	// tornDown holds the UIDs of the Bundles being deleted: an owner reference
	// names its Bundle by UID.
	tornDown map[types.UID]bool
	// declarations are the templates of the Bundles the holds of the objects
	// in limbo ask about, each Bundle's decoded once a command.
	declarations *bundlespec.DeclarationsMemo
}

// indexBundles indexes bundles, a listing, which names each Bundle once.
func indexBundles(bundles []limbov1alpha1.Bundle) bundleIndex {
	x := bundleIndex{
		inNamespace:  map[string][]limbov1alpha1.Bundle{},
		byKey:        make(map[client.ObjectKey]*limbov1alpha1.Bundle, len(bundles)),
		tornDown:     map[types.UID]bool{},
		declarations: &bundlespec.DeclarationsMemo{},
	}
	for i := range bundles {
		b := &bundles[i]
		x.inNamespace[b.Namespace] = append(x.inNamespace[b.Namespace], *b)
		if !b.DeletionTimestamp.IsZero() {
			x.tornDown[b.UID] = true
		}
	}
	// Only now that each namespace's slice is complete: an append may move it.
	for _, inNamespace := range x.inNamespace {
		for i := range inNamespace {
			x.byKey[client.ObjectKeyFromObject(&inNamespace[i])] = &inNamespace[i]
		}
	}
	return x
}

// namespace is the Bundles of namespace, in the listing's order.
func (x bundleIndex) namespace(namespace string) []limbov1alpha1.Bundle {
	return x.inNamespace[namespace]
}

// named is the Bundle of key; nil when the listing has none.
func (x bundleIndex) named(key client.ObjectKey) *limbov1alpha1.Bundle {
	return x.byKey[key]
}

// releasedHold tells whether the reaper holds obj, of kind gk, at now, and
// for which Bundle; bundles index the Bundles of obj's namespace (those of
// others are ignored). Only an object the reaper acts on (softdelete.Released:
// a teardown or a hand-over released it) is held, as the reaper decides
// (bundlespec.ReleasedHold).
func releasedHold(obj metav1.Object, gk schema.GroupKind, bundles bundleIndex, now time.Time) (reaperHold, bool) {
	if !softdelete.Released(obj) {
		return reaperHold{}, false
	}
	namespace := obj.GetNamespace()
	named := bundles.named(client.ObjectKey{Namespace: namespace, Name: obj.GetLabels()[limbov1alpha1.LabelBundle]})
	inNamespace := func() ([]limbov1alpha1.Bundle, error) { return bundles.namespace(namespace), nil }
	hold, by, _ := bundlespec.ReleasedHold(obj, gk, named, bundles.declarations, inNamespace, now)
	var why string
	switch hold {
	case bundlespec.NotHeld:
		return reaperHold{}, false
	case bundlespec.HeldDeclaredNotAdopted:
		why = fmt.Sprintf("Bundle %s, which its label %s names, declares it but has not adopted it (see the Bundle's status)", by, limbov1alpha1.LabelBundle)
	case bundlespec.HeldDeclared:
		why = fmt.Sprintf("Bundle %s, which its label %s names, declares it: its next pass adopts it and cancels the deletion", by, limbov1alpha1.LabelBundle)
	case bundlespec.HeldMayGenerate:
		why = fmt.Sprintf("Bundle %s, which its label %s names, has not finished a pass of its current spec, whose plugin resources may make it again", by, limbov1alpha1.LabelBundle)
	case bundlespec.HeldGeneratorNotReady:
		why = fmt.Sprintf("Bundle %s, which its label %s names, has %q, the plugin resource that made it, not Ready (see the Bundle's status): it may make it again", by, limbov1alpha1.LabelBundle, obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy])
	case bundlespec.HeldForAdopter:
		why = fmt.Sprintf("Bundle %s declares it to adopt it (%s); deleted only once no Bundle does", by, limbov1alpha1.AnnotationAdopt)
	}
	return reaperHold{Bundle: by, Why: why}, true
}
