package bundlespec

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// HoldReason says why the reaper leaves a released object to a Bundle for now.
type HoldReason int

const (
	// NotHeld: the released object is the reaper's (deleted once due).
	NotHeld HoldReason = iota
	// HeldDeclared: the Bundle its limbo.dev/bundle label names declares it and
	// has not finished a pass of its current spec: that pass adopts it and
	// cancels the deletion.
	HeldDeclared
	// HeldDeclaredNotAdopted: that Bundle declares it, and its pass of the
	// current spec ran without adopting it (a spec error elsewhere, a dependency
	// not Ready): held until someone fixes the Bundle.
	HeldDeclaredNotAdopted
	// HeldMayGenerate: that Bundle has a plugin resource and has not finished a
	// pass of its current spec: a generator may make the object again, which
	// nothing tells before the pass.
	HeldMayGenerate
	// HeldGeneratorNotReady: the object was generated, and the plugin resource
	// that made it (limbo.dev/generatedBy), in that Bundle's spec, was not Ready
	// in its pass of the current spec (Blocked, failed, still planning): it may
	// make the object again, which nothing tells before its plan runs.
	HeldGeneratorNotReady
	// HeldForAdopter: the object is due and another Bundle of its namespace, not
	// being deleted, declares it to adopt it (limbo.dev/adopt): that Bundle's
	// pass cancels the countdown once its adopting apply succeeds.
	HeldForAdopter
)

// ReleasedHold is the reaper's decision on obj, a released object of kind gk
// (softdelete.Released), at now: whether a Bundle decides it instead, and which
// (by name, in obj's namespace). named is the Bundle obj's limbo.dev/bundle
// label names (nil: there is none); declarations decodes its templates, and
// those of the adopters looked up, once for all the objects a reaper wake or a
// kubectl limbo command decides (nil: decoded for obj alone); namespaceBundles lists the Bundles of obj's
// namespace, called only when obj is due and named does not hold it. A Bundle
// being deleted holds nothing: a teardown never adopts, and it decides only what
// it still controls. An object named does not declare is the reaper's at once,
// whatever named's progress: a spec edited again and again (each edit a new
// generation) does not keep it waiting. The reaper and kubectl-limbo (which
// shows the hold) decide with it.
func ReleasedHold(obj metav1.Object, gk schema.GroupKind, named *limbov1alpha1.Bundle, declarations *DeclarationsMemo, namespaceBundles func() ([]limbov1alpha1.Bundle, error), now time.Time) (HoldReason, string, error) {
	except := ""
	if named != nil {
		except = named.Name
		passed := named.Status.ObservedGeneration >= named.Generation
		switch {
		case !named.DeletionTimestamp.IsZero():
		case declarations.Of(named).Declares(gk, obj.GetName()) != NotDeclared:
			if passed {
				return HeldDeclaredNotAdopted, named.Name, nil
			}
			return HeldDeclared, named.Name, nil
		case !passed && HasPlugin(named):
			return HeldMayGenerate, named.Name, nil
		case generatorNotReady(named, obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]):
			return HeldGeneratorNotReady, named.Name, nil
		}
	}
	if !softdelete.Due(now, obj) {
		return NotHeld, "", nil
	}
	bundles, err := namespaceBundles()
	if err != nil {
		return NotHeld, "", err
	}
	if adopter := declarations.Adopter(bundles, gk, obj.GetName(), except); adopter != nil {
		return HeldForAdopter, adopter.Name, nil
	}
	return NotHeld, "", nil
}

// generatorNotReady tells whether resource (a released object's
// limbo.dev/generatedBy; "" for an object no plugin made) is a plugin resource of
// b that its last status does not have Ready: its plan of b's spec has not run
// (Blocked on a dependency, failed, still planning), so what it makes is not
// known. A plugin resource that was Ready made what it makes.
func generatorNotReady(b *limbov1alpha1.Bundle, resource string) bool {
	return resource != "" && b.PluginResource(resource) != nil && !b.Status.ResourceReady(resource)
}

// MayGenerateAgain tells whether resource (an object's limbo.dev/generatedBy;
// "" for an object no plugin made) is a plugin resource of b that has not
// shown, in a pass of b's current spec, what it makes: the pass has not run,
// or the resource was not Ready in it (Blocked, failed, still planning). An
// object in limbo that it made before may be one it makes again — put back
// into its spec, which nothing tells before its plan runs.
//
// The API server bumps a Bundle's generation when it marks it for deletion
// (its finalizers hold it), and no pass of a teardown writes
// observedGeneration: the spec of a Bundle being deleted is its generation
// before that bump.
func MayGenerateAgain(b *limbov1alpha1.Bundle, resource string) bool {
	spec := b.Generation
	if b.DeletionTimestamp != nil {
		spec--
	}
	if b.Status.ObservedGeneration < spec { // no pass of the spec: not Ready in it
		return resource != "" && b.PluginResource(resource) != nil
	}
	return generatorNotReady(b, resource)
}

// DeclaredInLimbo is Declarations.InLimbo of b's spec, for one object.
func DeclaredInLimbo(b *limbov1alpha1.Bundle, gk schema.GroupKind, obj metav1.Object) bool {
	return DeclarationsOf(b).InLimbo(gk, obj)
}

// releasedByTeardownOf tells whether obj's limbo.dev/released was written by
// the teardown of b, being deleted: no earlier than b's deletion (less
// CopySlack, the clocks' skew; a retried release keeps the time it first
// wrote). An earlier one is another's — a release to b as adopter whose
// cancel did not land when b adopted it —, and its stamp may be long due.
func releasedByTeardownOf(b *limbov1alpha1.Bundle, obj metav1.Object) bool {
	value, released := obj.GetAnnotations()[limbov1alpha1.AnnotationReleased]
	if !released || b.DeletionTimestamp == nil {
		return false
	}
	at, err := time.Parse(time.RFC3339, value)
	return err == nil && !at.Before(b.DeletionTimestamp.Add(-softdelete.CopySlack))
}

// HasPlugin tells whether b has a plugin resource.
func HasPlugin(b *limbov1alpha1.Bundle) bool {
	for _, res := range b.Spec.Resources {
		if res.Plugin != nil {
			return true
		}
	}
	return false
}
