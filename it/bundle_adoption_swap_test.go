package it

import (
	"testing"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// Two Bundles that swap objects: each drops one of its objects and declares the
// other's to adopt it (limbo.dev/adopt), at once. Each is then not Ready — its
// resource of the other's object is ControlledByOther — and the readiness gate
// held every orphan of a Bundle that is not Ready, so neither handed over what
// the other waited for: both waited for good, neither object even stamped. A
// hand-over deletes nothing, so a Bundle that is not Ready still counts down
// the orphans another Bundle declares to adopt and hands them over: each ends
// with the other's object, the same objects.
func TestAdoptionSwapBetweenTwoBundles(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	delay := map[string]any{limbov1alpha1.AnnotationDeletionDelay: "2s"}
	adopt := map[string]any{limbov1alpha1.AnnotationAdopt: "true"}
	x := configMap("x", map[string]any{"a": "b"}, delay)
	y := configMap("y", map[string]any{"a": "b"}, delay)
	keepA := objectResource(t, "keep", configMap("keep-a", map[string]any{"a": "b"}, nil))
	keepB := objectResource(t, "keep", configMap("keep-b", map[string]any{"a": "b"}, nil))
	a := waitReady(t, createBundle(t, ns, "a", keepA, objectResource(t, "x", x)))
	b := waitReady(t, createBundle(t, ns, "b", keepB, objectResource(t, "y", y)))
	uidX, uidY := getObject(t, configMapGVK, ns, "x").GetUID(), getObject(t, configMapGVK, ns, "y").GetUID()

	updateBundle(t, a, keepA, objectResource(t, "y", withAnnotations(y, adopt)))
	updateBundle(t, b, keepB, objectResource(t, "x", withAnnotations(x, adopt)))

	waitHandedOver(t, a, b, "x", uidX)
	waitHandedOver(t, b, a, "y", uidY)
}
