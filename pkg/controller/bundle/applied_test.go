package bundle

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestContains(t *testing.T) {
	cases := []struct {
		name       string
		have, want any
		ok         bool
	}{
		{"equal maps", map[string]any{"a": "b"}, map[string]any{"a": "b"}, true},
		{"extra fields in have are ignored", map[string]any{"a": "b", "c": int64(1)}, map[string]any{"a": "b"}, true},
		{"missing field", map[string]any{}, map[string]any{"a": "b"}, false},
		{"changed value", map[string]any{"a": "x"}, map[string]any{"a": "b"}, false},
		{"explicit null wanted, field absent", map[string]any{}, map[string]any{"a": nil}, true},
		{"int64 equals float64", map[string]any{"n": float64(3)}, map[string]any{"n": int64(3)}, true},
		{"int64 differs", map[string]any{"n": int64(4)}, map[string]any{"n": int64(3)}, false},
		{"lists element-wise with server defaults", []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, []any{map[string]any{"port": int64(80)}}, true},
		{"list longer in have", []any{"a", "b"}, []any{"a"}, false},
		{"list order matters", []any{"b", "a"}, []any{"a", "b"}, false},
		{"empty wanted map matches absent", nil, map[string]any{}, true},
		{"type mismatch", "x", map[string]any{"a": "b"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := contains(tc.have, tc.want); got != tc.ok {
				t.Errorf("contains(%v, %v) = %v, want %v", tc.have, tc.want, got, tc.ok)
			}
		})
	}
}

func TestAppliedCacheUpToDate(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v"}}}
	live := desired.DeepCopy()
	live.SetUID(types.UID("u1"))
	live.SetResourceVersion("7")
	var c appliedCache
	hash := hashOf(desired)
	if c.upToDate(live, desired, hash) {
		t.Fatal("an object never applied by this process is not known to be up to date")
	}
	c.record("u1", hash)
	if !c.upToDate(live, desired, hash) {
		t.Error("applied and unchanged: up to date")
	}
	drifted := live.DeepCopy()
	_ = unstructured.SetNestedField(drifted.Object, "edited", "data", "k")
	if c.upToDate(drifted, desired, hash) {
		t.Error("a field limbo sets was changed: not up to date")
	}
	smaller := desired.DeepCopy()
	unstructured.RemoveNestedField(smaller.Object, "data")
	if c.upToDate(live, smaller, hashOf(smaller)) {
		t.Error("a field was removed from the template: not up to date (apply removes it)")
	}
	c.forget("u1")
	if c.upToDate(live, desired, hash) {
		t.Error("forgotten: not up to date")
	}
}
