package sharedmeta

import (
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// meta is freshly decoded metadata: every part newly allocated.
func meta(bundle string, labels map[string]string, controller *bool, fieldsV1 string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{
		Namespace: string([]byte("team-a")),
		Labels:    labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: bundle,
			UID: "uid-" + "of-" + "bundle", Controller: controller, BlockOwnerDeletion: ptr.To(true)}},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "limbo", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fieldsV1)}},
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		name   string
		first  *metav1.ObjectMeta
		second *metav1.ObjectMeta
		// shared lists the parts second must get from first; the others must stay second's own.
		labels, owners, fields bool
	}{{
		name:   "the same metadata: every part shared",
		first:  meta("app", map[string]string{"limbo.dev/bundle": "app", "tier": "web"}, ptr.To(true), `{"f:data":{}}`),
		second: meta("app", map[string]string{"tier": "web", "limbo.dev/bundle": "app"}, ptr.To(true), `{"f:data":{}}`),
		labels: true, owners: true, fields: true,
	}, {
		name:   "another Bundle: label and owner differ, the field set is shared",
		first:  meta("app", map[string]string{"limbo.dev/bundle": "app"}, ptr.To(true), `{"f:data":{}}`),
		second: meta("db", map[string]string{"limbo.dev/bundle": "db"}, ptr.To(true), `{"f:data":{}}`),
		fields: true,
	}, {
		name:   "a label value moved to another key is not the same labels",
		first:  meta("app", map[string]string{"a": "b", "c": "d"}, ptr.To(true), `{}`),
		second: meta("app", map[string]string{"a": "d", "c": "b"}, ptr.To(true), `{}`),
		owners: true, fields: true,
	}, {
		name:   "controller unset is not controller false",
		first:  meta("app", nil, nil, `{}`),
		second: meta("app", nil, ptr.To(false), `{}`),
		fields: true,
	}, {
		name:   "another field set",
		first:  meta("app", map[string]string{"x": "y"}, ptr.To(true), `{"f:data":{}}`),
		second: meta("app", map[string]string{"x": "y"}, ptr.To(true), `{"f:data":{"f:a":{}}}`),
		labels: true, owners: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := New()
			table.Share(tt.first)
			own := *tt.second // the parts second had before sharing
			table.Share(tt.second)
			check := func(what string, want bool, got, first, own any, same func(a, b any) bool) {
				t.Helper()
				switch {
				case want && !same(got, first):
					t.Errorf("%s: not shared with the first object's", what)
				case !want && !same(got, own):
					t.Errorf("%s: replaced by the first object's, which differ", what)
				}
			}
			check("labels", tt.labels, tt.second.Labels, tt.first.Labels, own.Labels, sameMap)
			check("owner references", tt.owners, tt.second.OwnerReferences, tt.first.OwnerReferences, own.OwnerReferences, sameSlice[metav1.OwnerReference])
			check("managedFields", tt.fields, tt.second.ManagedFields, tt.first.ManagedFields, own.ManagedFields, sameSlice[metav1.ManagedFieldsEntry])
			if tt.second.Namespace != "team-a" {
				t.Errorf("namespace %q, want team-a", tt.second.Namespace)
			}
		})
	}
}

func TestShareTimes(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	later := metav1.NewTime(at.Add(time.Second))
	table := New()
	first, second := meta("app", nil, nil, `{}`), meta("app", nil, nil, `{}`)
	first.ManagedFields[0].Time, second.ManagedFields[0].Time = &at, &later
	table.Share(first)
	table.Share(second)
	if sameSlice[metav1.ManagedFieldsEntry](first.ManagedFields, second.ManagedFields) {
		t.Error("managedFields of another time were shared")
	}
}

// TestPartCollision: a value whose hash is taken by another content is kept
// as it is, and the entry it collided with stays.
func TestPartCollision(t *testing.T) {
	var p part[map[string]string]
	a, b := map[string]string{"a": "1"}, map[string]string{"b": "2"}
	p.share(7, a, maps.Equal)
	if got := p.share(7, b, maps.Equal); !sameMap(got, b) {
		t.Error("a colliding value was replaced by another content")
	}
	if got := p.share(7, map[string]string{"a": "1"}, maps.Equal); !sameMap(got, a) {
		t.Error("the first entry was lost after a collision")
	}
}

// TestPartBound: a part that reaches MaxEntries starts again, so the table
// keeps alive at most MaxEntries values of a kind.
func TestPartBound(t *testing.T) {
	var p part[map[string]string]
	first := map[string]string{"first": ""}
	p.share(0, first, maps.Equal)
	for h := uint64(1); h < MaxEntries; h++ {
		p.share(h, map[string]string{}, maps.Equal)
	}
	if len(p.m) != MaxEntries {
		t.Fatalf("%d entries, want %d", len(p.m), MaxEntries)
	}
	p.share(MaxEntries, map[string]string{}, maps.Equal)
	if len(p.m) != 1 {
		t.Errorf("%d entries after reaching the bound, want 1 (the new one)", len(p.m))
	}
	if got := p.share(0, map[string]string{"first": ""}, maps.Equal); sameMap(got, first) {
		t.Error("an entry from before the reset is still handed out")
	}
}

// sameMap reports whether a and b are the same map (not only equal ones).
func sameMap(a, b any) bool {
	x, y := a.(map[string]string), b.(map[string]string)
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	const probe = "\x00sharedmeta-probe"
	x[probe] = ""
	_, same := y[probe]
	delete(x, probe)
	return same
}

// sameSlice reports whether a and b share their backing array.
func sameSlice[T any](a, b any) bool {
	x, y := a.([]T), b.([]T)
	if len(x) == 0 || len(y) == 0 {
		return len(x) == len(y)
	}
	return &x[0] == &y[0]
}
