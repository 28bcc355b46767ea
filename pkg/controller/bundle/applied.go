package bundle

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/reference"
	"github.com/limbo-dev/limbo/pkg/sharedmeta"
)

// appliedCache remembers, per object UID, what limbo last applied: a hash of the
// desired object and the set of fields limbo owned right after (its managedFields
// entry). A pass applies only when one of them no longer matches:
//   - the desired object changed (including a field removed from the template,
//     which server-side apply then removes): the hash differs;
//   - someone else changed or removed a field limbo set: that field moves to the
//     other manager (or goes), so limbo's field set differs.
//
// Values are never compared, so a value the API server normalises (cpu "0.5"
// stored as "500m") is not mistaken for drift. The cache lives in memory; a
// restarted process learns it again from what the Bundles' status recorded
// (seed): an object no one wrote since and whose desired object is the same is
// not applied again, any other once (which the API server turns into a no-op
// when nothing changed).
//
// An entry is a map slot holding the object's UID and two digests, all fixed
// size: about 60 bytes per managed object, where a sync.Map of boxed strings
// took about 350.
type appliedCache struct {
	mu sync.RWMutex
	m  map[uidKey]applied
	// replacing holds, for the applies that replaced a live copy, that copy's
	// resourceVersion and what the applying pass judged: few objects are
	// updated at a time, so these stay out of every object's slot.
	replacing map[uidKey]replacement
	// drift counts the drift put back on each object, to tell a fight with
	// another writer.
	drift driftWatch
}

// applied is one apply: 33 bytes in the map's slot, nothing allocated.
type applied struct {
	hash digest
	// fields is the digest of limbo's field set; fieldsKnown is false when the
	// API server's answer had no entry of limbo's.
	fields      digest
	fieldsKnown bool
}

// replacement is what an apply that replaced a live copy leaves besides its
// digests.
type replacement struct {
	// supersedes is the resourceVersion of the live copy the apply replaced: a
	// cache that has not caught up with the apply yet still shows that copy,
	// which must not be mistaken for drift and applied again.
	supersedes string
	// generation is the answer's metadata.generation (0: the kind keeps none):
	// a cached copy of an older one is older than the apply too, whatever its
	// resourceVersion — another writer's update of the old generation (a
	// rollout's status) that landed between limbo's read and its apply.
	generation int64
	// judged is what the applying pass judged of the API server's answer, for
	// the passes that run while the cache still shows the replaced copy; nil
	// until it judged.
	judged *judgedApply
}

// judgedApply is the readiness of an applied object as the applying pass judged
// it on the API server's answer, and for an object a reference reads the answer
// itself (nil otherwise): the replaced copy must not feed references either.
type judgedApply struct {
	state           limbov1alpha1.ResourceState
	reason, message string
	live            *unstructured.Unstructured
}

// digest is the first 128 bits of a SHA-256 sum, as hashOf and ownedFields give
// it (as a string of all 256). The cache compares digests of what limbo itself
// applied to detect change, where nothing is gained by a collision: 128 bits
// make an accidental one as good as impossible and halve what each object
// costs.
type digest [16]byte

// toDigest is s, a SHA-256 sum as a string, as a digest; false if s is not one.
func toDigest(s string) (d digest, ok bool) {
	if len(s) != sha256.Size {
		return d, false
	}
	copy(d[:], s)
	return d, true
}

// uidKey is an object's UID as a map key: the 128 bits of the UUID an API
// server gives every object, held in the map's slot instead of a string
// allocated per object. A UID that is not a UUID in its canonical form (no API
// server gives one) is keyed by the first 128 bits of its SHA-256.
type uidKey [16]byte

func keyOf(uid types.UID) uidKey {
	var k uidKey
	if parseUUID(string(uid), &k) {
		return k
	}
	sum := sha256.Sum256([]byte(uid))
	copy(k[:], sum[:])
	return k
}

// parseUUID decodes s, a UUID in its canonical form (lower-case hex digits,
// dashes after the 8th, 12th, 16th and 20th), into k; false for anything
// else, so that two different UIDs never get the same key this way.
func parseUUID(s string, k *uidKey) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		v, ok := hexDigit(s[i])
		if !ok {
			return false
		}
		k[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func hashOf(obj *unstructured.Unstructured) string {
	data, _ := json.Marshal(obj.Object) // unstructured content always marshals
	sum := sha256.Sum256(data)
	return string(sum[:])
}

// cachedOwnedFieldsKey holds, on cached copies of managed objects only (never
// written to the API server), the digest of limbo's apply field set: the cache
// drops managedFields to save memory (TrimForCache). It is a top-level key of the
// unstructured content, not an annotation: adding it allocates neither an
// annotations map nor a larger metadata map per object.
const cachedOwnedFieldsKey = "internal.limbo.dev/ownedFieldsDigest"

// digestFieldsType marks the managedFields entry that stands, on a cached
// metadata-only copy (never written to the API server), for limbo's entry: its
// fieldsV1 holds the digest of limbo's field set instead of the set itself, as a
// JSON string of hex digits (fieldsV1 must stay valid JSON: a patch computed
// from the copy encodes it).
const digestFieldsType = "internal.limbo.dev/sha256"

// ownedFields is a digest of limbo's apply field set of obj, as the API server
// records it: from managedFields, or from the cached copy's digest.
func ownedFields(obj *unstructured.Unstructured) string {
	if d, ok := obj.Object[cachedOwnedFieldsKey].(string); ok {
		return d
	}
	return ownedFieldsDigest(obj)
}

// ownedFieldsDigest is the digest of limbo's apply entry in obj's managedFields.
// The field set is hashed as compact JSON with sorted keys: an unstructured
// object's entry is in that form already (GetManagedFields encodes it from a
// map), a typed object's holds the API server's bytes, whose order is the field
// manager's own, and is re-encoded.
func ownedFieldsDigest(obj metav1.Object) string {
	_, canonical := obj.(*unstructured.Unstructured)
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != limbov1alpha1.FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		if mf.FieldsType == digestFieldsType {
			d, _ := hex.DecodeString(strings.Trim(mf.FieldsV1.GetRawString(), `"`))
			return string(d)
		}
		raw := mf.FieldsV1.GetRawBytes()
		var set any
		if !canonical && json.Unmarshal(raw, &set) == nil {
			raw, _ = json.Marshal(set) // decoded JSON always encodes
		}
		sum := sha256.Sum256(raw)
		return string(sum[:])
	}
	return ""
}

// TrimForCache is the cache's transform: it drops an object's managedFields,
// keeping the digest of limbo's entry: on an unstructured object (a managed
// object cached whole) as cachedOwnedFieldsKey, on a metadata-only object as a
// digestFieldsType entry (PartialObjectMetadata has no other place for it).
// managedFields go first, so that the metadata map does not grow.
func TrimForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil || len(obj.GetManagedFields()) == 0 {
		return in, nil
	}
	d := ownedFieldsDigest(obj)
	obj.SetManagedFields(nil)
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		if d != "" {
			o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: limbov1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: digestFieldsType, FieldsV1: metav1.NewFieldsV1(`"` + hex.EncodeToString([]byte(d)) + `"`)}}
		}
	case *unstructured.Unstructured:
		if d != "" {
			o.Object[cachedOwnedFieldsKey] = d
		}
	}
	return in, nil
}

// NewCacheTransform returns the cache's transform for managed objects:
// TrimForCache, and for a metadata-only object (ConfigMaps, Secrets: most of what
// Bundles hold) its labels, annotations, owner references and digest entry
// shared through shared with the other cached objects that carry the same. The
// objects of one Bundle carry its label and owner reference alike, and objects of
// one shape the same field set; shared, they cost a few bytes each instead of
// about 700.
func NewCacheTransform(shared *sharedmeta.Table) func(any) (any, error) {
	return func(in any) (any, error) {
		out, err := TrimForCache(in)
		if m, ok := out.(*metav1.PartialObjectMetadata); ok && err == nil {
			shared.Share(&m.ObjectMeta)
		}
		return out, err
	}
}

// record remembers an apply of the desired object whose hash is hash; obj is the
// API server's response; supersedes is the resourceVersion of the live copy the
// apply was decided on ("" for a create).
func (c *appliedCache) record(obj *unstructured.Unstructured, hash, supersedes string) {
	h, ok := toDigest(hash)
	if !ok {
		return // not a hash of hashOf: nothing to compare with later
	}
	fields, known := toDigest(ownedFields(obj))
	if obj.GetResourceVersion() == supersedes {
		supersedes = "" // the apply changed nothing: the live copy is the current one
	}
	k := keyOf(obj.GetUID())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allocate()
	c.m[k] = applied{hash: h, fields: fields, fieldsKnown: known}
	if supersedes == "" {
		delete(c.replacing, k)
	} else {
		c.replacing[k] = replacement{supersedes: supersedes, generation: obj.GetGeneration()}
	}
}

// allocate makes the maps of an empty cache; c.mu is held.
func (c *appliedCache) allocate() {
	if c.m == nil {
		c.m = map[uidKey]applied{}
		c.replacing = map[uidKey]replacement{}
	}
}

// invalidate makes uid's object out of date for the next pass, whatever the
// status vouches for (seed leaves an entry it knows alone): an entry that
// matches no hash. Forgotten instead, the object was seeded again from the
// appliedDigest the status holds, and found up to date.
func (c *appliedCache) invalidate(uid types.UID) {
	k := keyOf(uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allocate()
	c.m[k] = applied{}
	delete(c.replacing, k)
}

func (c *appliedCache) forget(uid types.UID) {
	k := keyOf(uid)
	c.mu.Lock()
	delete(c.m, k)
	delete(c.replacing, k)
	c.mu.Unlock()
	c.drift.forget(uid)
}

// judge remembers st, the readiness the applying pass judged of answer (the API
// server's answer to its apply of the object), and answer itself when body:
// what the passes go by while the cache still shows the copy the apply
// replaced. It must follow record of the same apply; an apply that replaced no
// copy needs none.
func (c *appliedCache) judge(answer *unstructured.Unstructured, st limbov1alpha1.ResourceStatus, body bool) {
	k := keyOf(answer.GetUID())
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.replacing[k]
	if !ok || r.supersedes == answer.GetResourceVersion() {
		return
	}
	r.judged = &judgedApply{state: st.State, reason: st.Reason, message: st.Message}
	if body {
		r.judged.live = answer
	}
	c.replacing[k] = r
}

// superseded reports whether live is the copy that limbo's last apply of it
// replaced, which the cache still shows — its status says nothing about what
// was applied (a Deployment's previous generation, rolled out and Available) —
// and what the applying pass judged of the apply, if it got that far.
func (c *appliedCache) superseded(live *unstructured.Unstructured) (*judgedApply, bool) {
	c.mu.RLock()
	r, ok := c.replacing[keyOf(live.GetUID())]
	c.mu.RUnlock()
	if !ok || !r.replaced(live) {
		return nil, false
	}
	return r.judged, true
}

// replaced reports whether live is the copy the apply replaced, or another copy
// older than the apply: of an older generation.
func (r replacement) replaced(live *unstructured.Unstructured) bool {
	if live.GetResourceVersion() == r.supersedes {
		return true
	}
	generation := live.GetGeneration()
	return generation > 0 && generation < r.generation
}

// upToDate reports whether live still holds what limbo applied, and what limbo
// applied was the desired object whose hash is hash.
func (c *appliedCache) upToDate(live *unstructured.Unstructured, hash string) bool {
	upToDate, _ := c.compare(live, hash)
	return upToDate
}

// drifted tells whether live is out of date only because someone changed or
// removed a field limbo set: what limbo last applied is what it would apply now.
func (c *appliedCache) drifted(live *unstructured.Unstructured, hash string) bool {
	_, drifted := c.compare(live, hash)
	return drifted
}

func (c *appliedCache) compare(live *unstructured.Unstructured, hash string) (upToDate, drifted bool) {
	k := keyOf(live.GetUID())
	c.mu.RLock()
	last, ok := c.m[k]
	r, replacing := c.replacing[k]
	c.mu.RUnlock()
	if h, valid := toDigest(hash); !ok || !valid || last.hash != h {
		return false, false
	}
	if replacing && r.replaced(live) {
		return true, false // a stale copy from before limbo's own apply: nothing new
	}
	fields, known := toDigest(ownedFields(live))
	if !last.fieldsKnown || !known {
		return false, false
	}
	return fields == last.fields, fields != last.fields
}

// appliedDigest is what status.resources[].appliedDigest records of live, an
// object found holding what limbo applied of the desired object whose hash is
// hash: a digest of hash, live's UID and its resourceVersion; "" for an object
// without either. A later process finds the same digest only on an object no
// one has written since (every write changes the resourceVersion) when it
// would apply the same desired object again: that apply would change nothing.
//
// A Secret gets none: its hash covers its data, and the status is read by more
// people than the Secret — with the template, the UID and a resourceVersion
// near the Bundle's, a digest would let them test guesses of a short value
// (a PIN) offline. A restarted process applies a Bundle's Secrets once again.
func appliedDigest(hash string, live *unstructured.Unstructured) string {
	uid, version := live.GetUID(), live.GetResourceVersion()
	if hash == "" || uid == "" || version == "" || reference.IsSecret(live.Object) {
		return ""
	}
	sum := sha256.New()
	for _, part := range []string{hash, string(uid), version} {
		sum.Write([]byte(part))
		sum.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(sum.Sum(nil)[:len(digest{})])
}

// joinDigests is the appliedDigest of a generator's status entry: the digests
// of its objects (appliedDigest), comma-separated, at most maxGeneratedDigests
// of them (a restarted process applies the objects past them again, once).
func joinDigests(digests []string) string {
	return strings.Join(digests[:min(len(digests), maxGeneratedDigests)], ",")
}

// maxGeneratedDigests bounds the digests a generator's status entry records:
// 23 bytes each, so that a Bundle of many generators, each of many objects,
// stays far below what etcd takes.
const maxGeneratedDigests = 16

// vouches reports whether recorded, an appliedDigest a status entry holds —
// one object's digest, or a generator's (joinDigests) — holds digest, the
// appliedDigest of a live copy. A digest names its object's UID: no entry
// vouches for another object than the one it was taken of.
func vouches(recorded, digest string) bool {
	if digest == "" {
		return false
	}
	for d := range strings.SplitSeq(recorded, ",") {
		if d == digest {
			return true
		}
	}
	return false
}

// seed remembers an apply that an earlier process made — this one's memory of
// its applies starts empty — when recorded(), the appliedDigest the Bundle's
// status holds for live, is live's for the desired object whose hash is hash:
// live is then exactly the copy found holding that apply, and the apply need
// not be made again. Its field set is the one to compare later copies with
// (compare). What this process remembers of live itself comes first: seed
// changes nothing then (and asks recorded nothing), nor for a copy without
// limbo's field set.
func (c *appliedCache) seed(live *unstructured.Unstructured, hash string, recorded func() string) {
	k := keyOf(live.GetUID())
	c.mu.RLock()
	_, known := c.m[k]
	c.mu.RUnlock()
	if known {
		return
	}
	h, valid := toDigest(hash)
	fields, owned := toDigest(ownedFields(live))
	if !valid || !owned {
		return
	}
	if !vouches(recorded(), appliedDigest(hash, live)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return // recorded meanwhile by a pass of this process: that one stands
	}
	c.allocate()
	c.m[k] = applied{hash: h, fields: fields, fieldsKnown: true}
}
