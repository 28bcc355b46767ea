package it

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/limbo-dev/limbo/it/testenv"
	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// A released object waits its delay even when its template names an owner among
// the Bundle's objects (an owner reference whose uid a reference reads): the
// teardown deletes that owner, and the garbage collector deletes a dependent
// whose owners are all gone — at once, its delay ignored, had the release kept
// that reference. The release drops the owner references to the Bundle's own
// objects, as it drops the Bundle's; one to an object outside the Bundle stays.
func TestReleasedObjectOutlivesItsOwnerInTheBundle(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	outside := createObject(t, ns, configMap("outside", map[string]any{"a": "b"}, nil))
	ownerRef := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "!{ownerUID}"}
	outsideRef := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "outside", "uid": string(outside.GetUID())}
	delayed := func(name string, refs ...any) limbov1alpha1.Resource {
		cm := configMap(name, map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: time.Hour.String()})
		cm["metadata"].(map[string]any)["ownerReferences"] = refs
		return objectResource(t, name, cm, limbov1alpha1.Reference{Name: "ownerUID", Resource: "owner", Path: "metadata.uid"})
	}
	b := waitReady(t, createBundle(t, ns, "owned",
		objectResource(t, "owner", configMap("owner", map[string]any{"a": "b"}, nil)),
		delayed("dependent", ownerRef),
		delayed("also-outside", ownerRef, outsideRef)))
	owner := getObject(t, configMapGVK, ns, "owner")
	if err := ownedBy(getObject(t, configMapGVK, ns, "dependent"), owner.GetUID(), b.UID); err != nil {
		t.Fatalf("the template's owner reference was not applied: %v", err)
	}
	// A dependent of the owner outside any Bundle: once the garbage collector has
	// deleted it, it has acted on the owner's deletion.
	canary := configMap("canary", nil, nil)
	canary["metadata"].(map[string]any)["ownerReferences"] = []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(owner.GetUID())}}
	createObject(t, ns, canary)

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	released := waitObject(t, configMapGVK, ns, "dependent", func(u *unstructured.Unstructured) error { return isReleased(u, b) })
	if err := ownedBy(released); err != nil {
		t.Errorf("released: %v", err)
	}
	alsoOutside := waitObject(t, configMapGVK, ns, "also-outside", func(u *unstructured.Unstructured) error { return isReleased(u, b) })
	if err := ownedBy(alsoOutside, outside.GetUID()); err != nil {
		t.Errorf("released: %v", err)
	}
	waitGone(t, configMapGVK, ns, "owner")
	waitBundleGone(t, b)
	waitGone(t, configMapGVK, ns, "canary")
	// The collector judges the owner's dependents in no set order: give it a
	// moment beyond the canary.
	testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "dependent", string(released.GetUID())))
}

// The owner references dropped at release are those to every object labelled
// as the Bundle's, not only those it still controls: an owner released in an
// earlier wave (it depends on its dependent here, so it goes first) is deleted
// by the reaper at its own, shorter, deadline, and a dependent that still named
// it would go with it.
func TestReleasedObjectOutlivesItsOwnerReleasedEarlier(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const ownerDelay = 3 * time.Second
	owner := func(refs ...limbov1alpha1.Reference) limbov1alpha1.Resource {
		return objectResource(t, "owner", configMap("owner", map[string]any{"a": "b"},
			map[string]any{limbov1alpha1.AnnotationDeletionDelay: ownerDelay.String()}), refs...)
	}
	dependent := func(ownerRefs ...any) limbov1alpha1.Resource {
		cm := configMap("dependent", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: time.Hour.String()})
		if len(ownerRefs) > 0 {
			cm["metadata"].(map[string]any)["ownerReferences"] = ownerRefs
		}
		return objectResource(t, "dependent", cm)
	}
	b := waitReady(t, createBundle(t, ns, "ordered", owner(), dependent()))
	ownerObj := getObject(t, configMapGVK, ns, "owner")
	// The owner's uid, written in the dependent's template; the owner waits for
	// the dependent (a reference that only orders), so a teardown releases it first.
	updateBundle(t, b, owner(limbov1alpha1.Reference{Resource: "dependent"}),
		dependent(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(ownerObj.GetUID())}))
	waitObject(t, configMapGVK, ns, "dependent", func(u *unstructured.Unstructured) error { return ownedBy(u, ownerObj.GetUID(), b.UID) })
	b = waitReady(t, b)
	canary := configMap("canary", nil, nil)
	canary["metadata"].(map[string]any)["ownerReferences"] = []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(ownerObj.GetUID())}}
	createObject(t, ns, canary)

	deleteBundle(t, b, metav1.DeletePropagationBackground)
	waitObject(t, configMapGVK, ns, "owner", func(u *unstructured.Unstructured) error { return isReleased(u, b) })
	released := waitObject(t, configMapGVK, ns, "dependent", func(u *unstructured.Unstructured) error { return isReleased(u, b) })
	if err := ownedBy(released); err != nil {
		t.Errorf("released after its owner: %v", err)
	}
	waitGone(t, configMapGVK, ns, "owner") // the reaper, at the owner's deadline
	waitGone(t, configMapGVK, ns, "canary")
	testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "dependent", string(released.GetUID())))
}

// ownedBy checks that u's owner references are to the objects uids, in order.
func ownedBy(u *unstructured.Unstructured, uids ...types.UID) error {
	var got []types.UID
	for _, ref := range u.GetOwnerReferences() {
		got = append(got, ref.UID)
	}
	if !slices.Equal(got, uids) {
		return fmt.Errorf("%s %s has owner references to %v, want %v", u.GetKind(), u.GetName(), got, uids)
	}
	return nil
}

// A hand-over at the end of a countdown is a release too: an object moved to
// another Bundle that cannot adopt it yet (its dependency is not Ready) keeps no
// owner reference to an object of the Bundle it leaves, which that Bundle deletes
// at its own deadline — the garbage collector would take the moved object with
// it, and the adopter would create an empty one in its place.
func TestHandedOverObjectOutlivesItsOwner(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	keep := objectResource(t, "keep", configMap("keep", map[string]any{"a": "b"}, nil))
	owner := objectResource(t, "owner", configMap("owner", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "6s"}))
	db := func() map[string]any {
		return configMap("db", map[string]any{"a": "b"}, map[string]any{limbov1alpha1.AnnotationDeletionDelay: "1s"})
	}
	owned := db()
	owned["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "!{ownerUID}"}}
	old := waitReady(t, createBundle(t, ns, "old", keep, owner,
		objectResource(t, "db", owned, limbov1alpha1.Reference{Name: "ownerUID", Resource: "owner", Path: "metadata.uid"})))
	ownerObj := getObject(t, configMapGVK, ns, "owner")
	uid := getObject(t, configMapGVK, ns, "db").GetUID()
	canary := configMap("canary", nil, nil)
	canary["metadata"].(map[string]any)["ownerReferences"] = []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(ownerObj.GetUID())}}
	createObject(t, ns, canary)

	createWidget(t, ns, "gate", false)
	b := createBundle(t, ns, "new", objectResource(t, "gate", withAnnotations(widget("gate"), map[string]any{limbov1alpha1.AnnotationAdopt: "true"})),
		objectResource(t, "db", withAnnotations(db(), map[string]any{limbov1alpha1.AnnotationAdopt: "true"}), limbov1alpha1.Reference{Resource: "gate"}))
	waitBundle(t, b, func(cur *limbov1alpha1.Bundle) error {
		return resourceIs(cur, "db", limbov1alpha1.ResourceError, "ControlledByOther")
	})
	updateBundle(t, old, keep)
	handedOver := waitObject(t, configMapGVK, ns, "db", func(u *unstructured.Unstructured) error {
		// Handed over: marked, and then controlled by nobody (a release's
		// second write).
		if !softdelete.Released(u) {
			return fmt.Errorf("db is not handed over yet: %v, owners %v", u.GetAnnotations(), u.GetOwnerReferences())
		}
		return nil
	})
	if err := ownedBy(handedOver); err != nil {
		t.Errorf("handed over: %v", err)
	}
	waitGone(t, configMapGVK, ns, "owner") // the old Bundle, at the owner's deadline
	waitGone(t, configMapGVK, ns, "canary")
	testenv.Consistently(t, 2*time.Second, existsWithUID(t, configMapGVK, ns, "db", string(uid)))
}
