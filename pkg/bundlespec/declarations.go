package bundlespec

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// ObjectID names an object among a Bundle's as ObjectKey does, by its
// StoredKind and its name, as a value: a map key that takes no text to build.
type ObjectID struct {
	Kind schema.GroupKind
	Name string
}

// ObjectIDOf is the ObjectID of the object of kind gk named name.
func ObjectIDOf(gk schema.GroupKind, name string) ObjectID {
	return ObjectID{Kind: StoredKind(gk), Name: name}
}

// String is the ObjectKey of id.
func (id ObjectID) String() string { return id.Kind.String() + "/" + id.Name }

// Declarations is what the templates of a Bundle's spec declare, each template
// decoded once (HeaderOf). A teardown wave asks it about each of its objects:
// decoding every template for each object made a wave of 500 take 6.2 s.
type Declarations struct {
	bundle *limbov1alpha1.Bundle
	// objects holds what the readable templates say of each object they name.
	objects map[ObjectID]declared
	// unreadable is the error of the first template that cannot be read.
	unreadable error
}

// declared is what the readable templates that name one object say of it.
type declared struct {
	// declaration is DeclaredToAdopt when one of them adopts the object,
	// DeclaredOnly otherwise.
	declaration Declaration
	// delay is the first one's limbo.dev/deletionDelay.
	delay string
}

// DeclarationsOf reads the templates of b's spec.
func DeclarationsOf(b *limbov1alpha1.Bundle) *Declarations {
	d := &Declarations{bundle: b, objects: make(map[ObjectID]declared, len(b.Spec.Resources))}
	for _, res := range b.Spec.Resources {
		h, ok, err := HeaderOf(res)
		switch {
		case !ok:
		case err != nil:
			if d.unreadable == nil {
				d.unreadable = fmt.Errorf("the template of resource %q cannot be read: %w", res.Name, err)
			}
		default:
			id := ObjectIDOf(h.GVK.GroupKind(), h.Name)
			o, seen := d.objects[id]
			if !seen {
				o = declared{declaration: DeclaredOnly, delay: h.Annotations[limbov1alpha1.AnnotationDeletionDelay]}
			}
			if h.Annotations[limbov1alpha1.AnnotationAdopt] == "true" {
				o.declaration = DeclaredToAdopt
			}
			d.objects[id] = o
		}
	}
	return d
}

// DeclarationsMemo holds the Declarations of the Bundles that the decisions on
// many released objects ask about (ReleasedHold): a reaper wake's, a kubectl
// limbo command's. Each Bundle's templates are decoded once, however many of
// its objects are decided: decoded for each, a Bundle that released 1,000
// objects and has 200 templates cost 200,000 template decodes a wake.
//
// A Bundle is known by its UID and resourceVersion, which name one content of
// it: read again unchanged, it is not decoded again; changed since (a new
// resourceVersion), or deleted and created again (a new UID), it is. A Bundle
// without both (built by hand, not read from the API server) is decoded each
// time: nothing tells it unchanged. One memo serves one wake or command, so
// that it does not keep the Bundles deleted since. The zero value is ready; a
// nil memo decodes each time. Not safe for concurrent use: the reaper decides
// a wake's objects one by one, as kubectl limbo does. A resourceVersion names
// the whole object, status included: the Declarations of the first copy read
// answer for every copy of it (Delay and InLimbo read its status too).
type DeclarationsMemo struct {
	byUID map[types.UID]memoized
}

// memoized are the Declarations of one resourceVersion of a Bundle.
type memoized struct {
	resourceVersion string
	declarations    *Declarations
}

// Of is DeclarationsOf(b), built at most once for each resourceVersion of b.
func (m *DeclarationsMemo) Of(b *limbov1alpha1.Bundle) *Declarations {
	if m == nil || b.UID == "" || b.ResourceVersion == "" {
		return DeclarationsOf(b)
	}
	if known, ok := m.byUID[b.UID]; ok && known.resourceVersion == b.ResourceVersion {
		return known.declarations
	}
	d := DeclarationsOf(b)
	if m.byUID == nil {
		m.byUID = map[types.UID]memoized{}
	}
	// Only the latest: a Bundle changed during a long wake is not kept in
	// every resourceVersion it had.
	m.byUID[b.UID] = memoized{resourceVersion: b.ResourceVersion, declarations: d}
	return d
}

// Declares reports whether one of the templates is the object of kind gk named
// name, and whether it adopts it. A template that cannot be read counts as
// DeclaredOnly (it might be that object): the safe reading for deleting, since
// nothing is deleted on a broken spec's account.
func (d *Declarations) Declares(gk schema.GroupKind, name string) Declaration {
	found, unreadable := d.DeclaresReadably(gk, name)
	if unreadable != nil {
		return max(found, DeclaredOnly)
	}
	return found
}

// DeclaresReadably is Declares by the templates that can be read, and the
// error of the first that cannot, when no readable one names the object: for
// keeping an object, which an unreadable template must not decide.
func (d *Declarations) DeclaresReadably(gk schema.GroupKind, name string) (Declaration, error) {
	if o, ok := d.objects[ObjectIDOf(gk, name)]; ok {
		return o.declaration, nil
	}
	return NotDeclared, d.unreadable
}

// Delay is the limbo.dev/deletionDelay the spec declares for obj, an object
// of kind gk that the Bundle controls: that of the readable template that
// declares it or, for an object a plugin resource of the spec generated
// (AnnotationGeneratedBy), that is not in limbo and whose generator has not
// applied it in a pass of the current spec (MayGenerateAgain: Blocked, failed,
// still planning), the resource's deletionDelay; "" when none declares it or
// with no delay. A plugin may give an object a delay of its own, which only
// its plan tells: the resource's stands for it where the generator could not
// apply it, and is only written where it lengthens a countdown
// (softdelete.Lengthens). An object in limbo that a generator made was
// dropped by its plan: its countdown is decided.
func (d *Declarations) Delay(gk schema.GroupKind, obj metav1.Object) string {
	if o, ok := d.objects[ObjectIDOf(gk, obj.GetName())]; ok {
		return o.delay
	}
	if _, stamped := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; stamped {
		return ""
	}
	// A generator Ready in a pass of the current spec applied its objects with
	// the delays it chose (its resource's or their own): they are on them.
	if gen := obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]; MayGenerateAgain(d.bundle, gen) {
		return d.bundle.PluginResource(gen).Plugin.DeletionDelay
	}
	return ""
}

// InLimbo reports whether obj, an object of kind gk that the Bundle controls,
// counts down (not by a release of the Bundle's teardown) while a template
// that can be read declares it, or while the generator that made it may make
// it again (MayGenerateAgain: put back into its spec, its plan not run since).
// A teardown of the Bundle takes such an object out of limbo and releases it
// with a countdown from the Bundle's deletion: released with its old stamp,
// long due, the reaper deleted it at once.
func (d *Declarations) InLimbo(gk schema.GroupKind, obj metav1.Object) bool {
	if _, stamped := obj.GetAnnotations()[limbov1alpha1.AnnotationDeletionTimestamp]; !stamped {
		return false
	}
	if releasedByTeardownOf(d.bundle, obj) {
		// Half released by this teardown (its marks landed, the owner
		// reference not yet gone: a policy dropped a mark, a conflict, a
		// crash): its stamp is the teardown's, which the release keeps.
		// Cancelled, it was released anew and cancelled again, pass after
		// pass, each with a false DeletionCancelled.
		return false
	}
	if MayGenerateAgain(d.bundle, obj.GetAnnotations()[limbov1alpha1.AnnotationGeneratedBy]) {
		return true
	}
	found, _ := d.DeclaresReadably(gk, obj.GetName())
	return found != NotDeclared
}
