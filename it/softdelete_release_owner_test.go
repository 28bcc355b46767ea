package it

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
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
	if err := existsWithUID(t, configMapGVK, ns, "dependent", string(released.GetUID()))(); err != nil {
		t.Fatalf("the garbage collector deleted the released object with its owner, an hour before its deadline: %v", err)
	}
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
