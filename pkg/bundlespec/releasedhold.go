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
	// HeldMayGenerate: that Bundle has a plugin resource that has not been
	// Ready in a pass of its current spec (no pass yet, or the resource Blocked,
	// failed, still planning): a generator may make the object again, which
	// nothing tells before its plan of the current spec.
	HeldMayGenerate
	// HeldForAdopter: the object is due and another Bundle of its namespace, not
	// being deleted, declares it to adopt it (limbo.dev/adopt): that Bundle's
	// pass cancels the countdown once its adopting apply succeeds.
	HeldForAdopter
)

// ReleasedHold is the reaper's decision on obj, a released object of kind gk
// (softdelete.Released), at now: whether a Bundle decides it instead, and which
// (by name, in obj's namespace). named is the Bundle obj's limbo.dev/bundle
// label names (nil: there is none); namespaceBundles lists the Bundles of obj's
// namespace, called only when obj is due and named does not hold it. A Bundle
// being deleted holds nothing: a teardown never adopts, and it decides only what
// it still controls. An object named does not declare is the reaper's at once,
// whatever named's progress: a spec edited again and again (each edit a new
// generation) does not keep it waiting. The reaper and kubectl-limbo (which
// shows the hold) decide with it.
func ReleasedHold(obj metav1.Object, gk schema.GroupKind, named *limbov1alpha1.Bundle, namespaceBundles func() ([]limbov1alpha1.Bundle, error), now time.Time) (HoldReason, string, error) {
	except := ""
	if named != nil {
		except = named.Name
		passed := named.Status.ObservedGeneration >= named.Generation
		switch {
		case !named.DeletionTimestamp.IsZero():
		case Declares(named, gk, obj.GetName()) != NotDeclared:
			if passed {
				return HeldDeclaredNotAdopted, named.Name, nil
			}
			return HeldDeclared, named.Name, nil
		case HasPlugin(named) && (!passed || !pluginsReady(named)):
			return HeldMayGenerate, named.Name, nil
		}
	}
	if !softdelete.Due(now, obj) {
		return NotHeld, "", nil
	}
	bundles, err := namespaceBundles()
	if err != nil {
		return NotHeld, "", err
	}
	if adopter := Adopter(bundles, gk, obj.GetName(), except); adopter != nil {
		return HeldForAdopter, adopter.Name, nil
	}
	return NotHeld, "", nil
}

// pluginsReady tells whether b's last status has every plugin resource of its
// spec Ready: each generator's plan then ran and its objects were applied.
func pluginsReady(b *limbov1alpha1.Bundle) bool {
	ready := map[string]bool{}
	for _, st := range b.Status.Resources {
		ready[st.Name] = st.State == limbov1alpha1.ResourceReady
	}
	for _, res := range b.Spec.Resources {
		if res.Plugin != nil && !ready[res.Name] {
			return false
		}
	}
	return true
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
