package main

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// releasedHold tells whether the reaper holds obj, of kind gk, at now, and
// for which Bundle; bundles are the Bundles of obj's namespace (others are
// ignored). Only an object the reaper acts on (softdelete.Released: a
// teardown or a hand-over released it) is held, as the reaper decides
// (bundlespec.ReleasedHold).
func releasedHold(obj metav1.Object, gk schema.GroupKind, bundles []limbov1alpha1.Bundle, now time.Time) (reaperHold, bool) {
	if !softdelete.Released(obj) {
		return reaperHold{}, false
	}
	namespace, label := obj.GetNamespace(), obj.GetLabels()[limbov1alpha1.LabelBundle]
	inNamespace := slices.DeleteFunc(slices.Clone(bundles), func(b limbov1alpha1.Bundle) bool { return b.Namespace != namespace })
	var named *limbov1alpha1.Bundle
	if i := slices.IndexFunc(inNamespace, func(b limbov1alpha1.Bundle) bool { return b.Name == label }); i >= 0 {
		named = &inNamespace[i]
	}
	hold, by, _ := bundlespec.ReleasedHold(obj, gk, named, func() ([]limbov1alpha1.Bundle, error) { return inNamespace, nil }, now)
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
