package bundle

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/limbo-dev/limbo/pkg/limboscan"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// ConfigMaps and Secrets are cached as metadata only (PartialObjectMetadata):
// nothing limbo decides from the cache reads their body — they have no status, so
// they are Ready once they exist; ownership, labels, stamps and limbo's field set
// (the digest of its managedFields entry, which TrimForCache keeps) are metadata. They are most
// of what Bundles hold, and their decoded bodies were most of the controller's
// heap; a Secret's data is not kept in limbo's memory at all.
//
// A reference that reads a value from one (a ConfigMap's data, a Secret's key)
// gets the body from bodies: read from the API server once per resourceVersion
// and kept only for objects that references read.
//
// Every read of these kinds through the cached client must use the metadata
// types (cachedObject, cachedList): a read of one as unstructured would start a
// second, full informer.
func metadataOnly(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "" && gvk.Version == "v1" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret")
}

// metadataOnlyKey marks an unstructured copy made from cached metadata (never
// sent to the API server): it has no body.
const metadataOnlyKey = "internal.limbo.dev/metadataOnly"

// cachedObject is the empty object to read an object of gvk from the cache into.
func cachedObject(gvk schema.GroupVersionKind) client.Object {
	if metadataOnly(gvk) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// cachedList is the empty list to list objects of gvk from the cache into.
func cachedList(gvk schema.GroupVersionKind) client.ObjectList {
	if metadataOnly(gvk) {
		return limboscan.MetadataList(gvk)
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// asUnstructured returns obj, read with cachedObject or from cachedList, as the
// unstructured object of gvk that a pass works with.
func asUnstructured(obj client.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o, nil
	case *metav1.PartialObjectMetadata:
		// The copy's managedFields are at most the digest of limbo's entry
		// (TrimForCache): it goes to the top-level key ownedFields reads.
		digest := ownedFieldsDigest(o)
		om := o.ObjectMeta
		om.ManagedFields = nil
		metadata, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&om)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": metadata, metadataOnlyKey: true}}
		if digest != "" {
			u.Object[cachedOwnedFieldsKey] = digest
		}
		// An apply's answer keeps the entry of a delay the pass wrote while
		// the resource was not applied: Engine.DropKeptDelay reads it.
		// Collected one by one: every cached copy passes here, and holds the
		// digest's entry, which a copy of the whole list would allocate for.
		var kept []metav1.ManagedFieldsEntry
		for _, m := range o.ManagedFields {
			if m.Manager == softdelete.KeptDelayManager {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			u.SetManagedFields(kept)
		}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	return nil, fmt.Errorf("unexpected cached object %T", obj)
}

// listItems returns the items of a list read with cachedList.
func listItems(list client.ObjectList, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *metav1.PartialObjectMetadataList:
		for i := range l.Items {
			u, err := asUnstructured(&l.Items[i], gvk)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// bodies keeps the full content of metadata-only objects that references read,
// by UID, as of the resourceVersion it was read at.
type bodies struct {
	mu sync.Mutex
	m  map[types.UID]*unstructured.Unstructured
}

// full returns live with its body: live itself when it has one (an apply's
// answer, a kind cached whole), else the body kept for live's resourceVersion,
// else the object read from the API server through reader.
func (b *bodies) full(ctx context.Context, reader client.Reader, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if _, ok := live.Object[metadataOnlyKey]; !ok {
		if metadataOnly(live.GroupVersionKind()) {
			b.store(live)
		}
		return live, nil
	}
	b.mu.Lock()
	kept := b.m[live.GetUID()]
	b.mu.Unlock()
	if kept != nil && kept.GetResourceVersion() == live.GetResourceVersion() {
		return kept, nil
	}
	read := &unstructured.Unstructured{}
	read.SetGroupVersionKind(live.GroupVersionKind())
	if err := reader.Get(ctx, client.ObjectKeyFromObject(live), read); err != nil {
		return nil, fmt.Errorf("read %s %q: %w", live.GetKind(), live.GetName(), err)
	}
	if read.GetUID() != live.GetUID() {
		return nil, fmt.Errorf("read %s %q: it was replaced (uid %s, was %s)", live.GetKind(), live.GetName(), read.GetUID(), live.GetUID())
	}
	read.SetManagedFields(nil)
	b.store(read)
	return read, nil
}

func (b *bodies) store(obj *unstructured.Unstructured) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[types.UID]*unstructured.Unstructured{}
	}
	b.m[obj.GetUID()] = obj
}

// forget drops the body of a deleted object.
func (b *bodies) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, uid)
}
