package bundle

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// appliedCache remembers, per object UID, a hash of what limbo last applied, so a
// pass can tell "nothing to do" from "apply" without a write. Together with the
// subset check below it makes a no-op reconcile write nothing:
//   - the desired object changed (including a field removed from the template):
//     the hash differs;
//   - someone changed a field limbo sets: the live object no longer contains the
//     desired one.
//
// It lives in memory: after a restart every object is applied once (the API server
// turns an unchanged apply into a no-op), which re-learns the hashes.
type appliedCache struct{ m sync.Map }

func hashOf(obj *unstructured.Unstructured) string {
	data, _ := json.Marshal(obj.Object) // unstructured content always marshals
	sum := sha256.Sum256(data)
	return string(sum[:])
}

func (c *appliedCache) record(uid types.UID, hash string) { c.m.Store(uid, hash) }

func (c *appliedCache) forget(uid types.UID) { c.m.Delete(uid) }

// upToDate reports whether live already holds desired, whose hash is hash.
func (c *appliedCache) upToDate(live *unstructured.Unstructured, desired *unstructured.Unstructured, hash string) bool {
	last, ok := c.m.Load(live.GetUID())
	return ok && last == hash && contains(live.Object, desired.Object)
}

// contains reports whether have holds every field of want with an equal value.
// Lists must have the same length and hold the wanted elements in order; fields
// the API server or others added to maps are ignored.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, present := h[k]
			if !present {
				if wv == nil {
					continue
				}
				return false
			}
			if !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case int64:
		return numberEqual(float64(w), have)
	case float64:
		return numberEqual(w, have)
	default:
		return reflect.DeepEqual(want, have)
	}
}

func numberEqual(w float64, have any) bool {
	switch h := have.(type) {
	case int64:
		return float64(h) == w
	case float64:
		return h == w
	}
	return false
}
