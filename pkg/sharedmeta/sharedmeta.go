package sharedmeta

import (
	"bytes"
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxEntries bounds each of a Table's parts (labels, annotations, owner
// references, managedFields): a part that reaches it forgets what it holds and
// starts again. The table then keeps alive nothing that no cached object holds,
// except up to that many entries; objects cached after that share among
// themselves again.
const MaxEntries = 1 << 14

// Table hands out one shared copy of each distinct metadata part. The zero value
// is not usable; use New.
type Table struct {
	mu          sync.Mutex
	seed        maphash.Seed
	labels      part[map[string]string]
	annotations part[map[string]string]
	owners      part[[]metav1.OwnerReference]
	fields      part[[]metav1.ManagedFieldsEntry]
	strings     part[string]
}

// New returns an empty Table.
func New() *Table {
	return &Table{seed: maphash.MakeSeed()}
}

// Share replaces obj's labels, annotations, owner references and managedFields
// by the copies the table already holds of the same content, and its namespace
// by the shared string. obj must be freshly decoded (held by nothing else), and
// must not be modified in place afterwards.
func (t *Table) Share(obj *metav1.ObjectMeta) {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj.Namespace = t.string(obj.Namespace)
	if len(obj.Labels) > 0 {
		obj.Labels = t.labels.share(hashStrings(t.seed, obj.Labels), obj.Labels, maps.Equal)
	}
	if len(obj.Annotations) > 0 {
		obj.Annotations = t.annotations.share(hashStrings(t.seed, obj.Annotations), obj.Annotations, maps.Equal)
	}
	if len(obj.OwnerReferences) > 0 {
		obj.OwnerReferences = t.owners.share(hashOwners(t.seed, obj.OwnerReferences), obj.OwnerReferences, equalOwners)
	}
	if len(obj.ManagedFields) > 0 {
		obj.ManagedFields = t.fields.share(hashFields(t.seed, obj.ManagedFields), obj.ManagedFields, equalFields)
	}
}

// Strings replaces each of ss by the copy the table already holds of the same
// string: for the strings that many cached objects repeat (a state, a kind, a
// condition's message). A table of strings held strongly and bounded by
// MaxEntries: unique.Make would forget a string at the first garbage collection
// after its handles are gone, and objects are cached over many.
func (t *Table) Strings(ss ...*string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range ss {
		*s = t.string(*s)
	}
}

func (t *Table) string(s string) string {
	if s == "" {
		return s
	}
	return t.strings.share(maphash.String(t.seed, s), s, func(a, b string) bool { return a == b })
}

// part is one kind of shared value, found by a hash of its content and
// compared in full: a collision only means that v is not shared.
type part[T any] struct{ m map[uint64]T }

func (p *part[T]) share(h uint64, v T, equal func(a, b T) bool) T {
	if kept, ok := p.m[h]; ok {
		if equal(kept, v) {
			return kept
		}
		return v
	}
	if p.m == nil || len(p.m) >= MaxEntries {
		p.m = map[uint64]T{}
	}
	p.m[h] = v
	return v
}

// hashStrings hashes a label or annotation map independently of its order.
func hashStrings(seed maphash.Seed, m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		sum += h.Sum64() // addition: the same for every iteration order
	}
	return sum
}

func hashOwners(seed maphash.Seed, refs []metav1.OwnerReference) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, r := range refs {
		for _, s := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID)} {
			h.WriteString(s)
			h.WriteByte(0)
		}
		h.WriteByte(flag(r.Controller))
		h.WriteByte(flag(r.BlockOwnerDeletion))
	}
	return h.Sum64()
}

func equalOwners(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.OwnerReference) bool {
		return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.UID == y.UID &&
			flag(x.Controller) == flag(y.Controller) && flag(x.BlockOwnerDeletion) == flag(y.BlockOwnerDeletion)
	})
}

func hashFields(seed maphash.Seed, entries []metav1.ManagedFieldsEntry) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, e := range entries {
		for _, s := range []string{e.Manager, string(e.Operation), e.APIVersion, e.FieldsType, e.Subresource} {
			h.WriteString(s)
			h.WriteByte(0)
		}
		if e.Time != nil {
			h.WriteString(e.Time.UTC().String())
		}
		h.WriteByte(0)
		if e.FieldsV1 != nil {
			h.Write(e.FieldsV1.GetRawBytes())
		}
		h.WriteByte(0)
	}
	return h.Sum64()
}

func equalFields(a, b []metav1.ManagedFieldsEntry) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.ManagedFieldsEntry) bool {
		return x.Manager == y.Manager && x.Operation == y.Operation && x.APIVersion == y.APIVersion &&
			x.FieldsType == y.FieldsType && x.Subresource == y.Subresource &&
			(x.Time == nil) == (y.Time == nil) && (x.Time == nil || x.Time.Equal(y.Time)) &&
			(x.FieldsV1 == nil) == (y.FieldsV1 == nil) && (x.FieldsV1 == nil || bytes.Equal(x.FieldsV1.GetRawBytes(), y.FieldsV1.GetRawBytes()))
	})
}

// flag encodes an optional boolean: unset, false or true.
func flag(b *bool) byte {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	}
	return 1
}
