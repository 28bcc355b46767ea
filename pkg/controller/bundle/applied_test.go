package bundle

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

func withManagedFields(u *unstructured.Unstructured, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.SetManagedFields(entries)
	return u
}

func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestAppliedCacheUpToDate(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v", "j": "w"}}}
	hash := hashOf(desired)
	ours := `{"f:data":{"f:j":{},"f:k":{}}}`
	response := withManagedFields(desired, entry("limbo", metav1.ManagedFieldsOperationApply, ours))
	response.SetUID(types.UID("u1"))

	var c appliedCache
	if c.upToDate(response, hash) {
		t.Fatal("an object this process never applied is not known to be up to date")
	}
	c.record(response, hash, "")
	cases := []struct {
		name string
		live *unstructured.Unstructured
		hash string
		want bool
	}{
		{"unchanged", response, hash, true},
		{"others added fields and managers", withManagedFields(response,
			entry("limbo", metav1.ManagedFieldsOperationApply, ours),
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:extra":{}}}`),
			entry("limbo", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:annotations":{"f:limbo.dev/deletionTimestamp":{}}}}`)), hash, true},
		{"someone changed a field limbo set (it moved to them)", withManagedFields(response,
			entry("limbo", metav1.ManagedFieldsOperationApply, `{"f:data":{"f:j":{}}}`),
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:k":{}}}`)), hash, false},
		{"limbo's entry is gone", withManagedFields(response), hash, false},
		{"the template changed", response, "other", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.upToDate(tc.live, tc.hash); got != tc.want {
				t.Errorf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}
	c.forget("u1")
	if c.upToDate(response, hash) {
		t.Error("forgotten: not up to date")
	}

	// A correction of drift: the copy it was decided on is stale until the cache
	// catches up, and must not be applied again; a later drift must.
	drifted := withManagedFields(response, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:data":{"f:k":{}}}`))
	drifted.SetResourceVersion("5")
	corrected := response.DeepCopy()
	corrected.SetResourceVersion("6")
	c.record(corrected, hash, "5")
	if !c.upToDate(drifted, hash) {
		t.Error("the stale copy limbo's apply superseded is up to date")
	}
	if judged, ok := c.superseded(drifted); !ok || judged != nil {
		t.Errorf("the stale copy before the applying pass judged the answer: superseded = %v, %v; want true, nothing judged", judged, ok)
	}
	// The applying pass judged the answer; the next passes go by that, and by
	// the answer itself for an object a reference reads.
	c.judge(corrected, limbov1alpha1.ResourceStatus{State: limbov1alpha1.ResourceInProgress, Reason: "NotReady", Message: "rolling out"}, true)
	if judged, ok := c.superseded(drifted); !ok || judged == nil || judged.state != limbov1alpha1.ResourceInProgress || judged.message != "rolling out" || judged.live != corrected {
		t.Errorf("the stale copy: superseded = %+v, %v; want the state judged of the answer, and the answer", judged, ok)
	}
	c.judge(corrected, limbov1alpha1.ResourceStatus{State: limbov1alpha1.ResourceReady}, false)
	if judged, _ := c.superseded(drifted); judged == nil || judged.state != limbov1alpha1.ResourceReady || judged.live != nil {
		t.Errorf("judged without the body: %+v, want Ready and no answer kept", judged)
	}
	if judged, ok := c.superseded(corrected); ok || judged != nil {
		t.Error("the applied copy is taken for the superseded one")
	}
	if c.upToDate(drifted, "other") {
		t.Error("a changed template is applied even over the superseded copy")
	}
	again := drifted.DeepCopy()
	again.SetResourceVersion("7")
	if c.upToDate(again, hash) {
		t.Error("a drift after the correction is applied")
	}
	if _, ok := c.superseded(again); ok {
		t.Error("a copy newer than the apply is taken for the superseded one")
	}

	// An apply the API server found to change nothing answers with the
	// resourceVersion it was decided on: that copy is the current one, and no
	// watch event will bring another.
	unchanged := response.DeepCopy()
	unchanged.SetResourceVersion("8")
	c.record(unchanged, hash, "8")
	c.judge(unchanged, limbov1alpha1.ResourceStatus{State: limbov1alpha1.ResourceReady}, true)
	if judged, ok := c.superseded(unchanged); ok || judged != nil {
		t.Error("the copy a no-op apply left as it was is taken for a superseded one")
	}
	if !c.upToDate(unchanged, hash) {
		t.Error("the copy a no-op apply left as it was is not up to date")
	}

	// Forgetting the object forgets the copy its last apply replaced too.
	c.record(corrected, hash, "5")
	c.forget("u1")
	if _, ok := c.superseded(drifted); ok {
		t.Error("a forgotten object's replaced copy is still taken for a superseded one")
	}
}

func TestTrimForCacheKeepsTheNoOpCheck(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v"}}}
	hash := hashOf(desired)
	ours := `{"f:data":{"f:k":{}}}`
	response := withManagedFields(desired, entry("limbo", metav1.ManagedFieldsOperationApply, ours), entry("kubectl", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{}}`))
	response.SetUID(types.UID("u1"))
	var c appliedCache
	c.record(response, hash, "")

	cached, err := TrimForCache(response.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := cached.(*unstructured.Unstructured)
	if len(trimmed.GetManagedFields()) != 0 || len(trimmed.GetAnnotations()) != 0 {
		t.Fatalf("cached copy keeps managedFields %v or gained annotations %v", trimmed.GetManagedFields(), trimmed.GetAnnotations())
	}
	if !c.upToDate(trimmed, hash) {
		t.Fatal("a trimmed copy of what limbo applied is not up to date")
	}
	drifted, _ := TrimForCache(withManagedFields(response, entry("limbo", metav1.ManagedFieldsOperationApply, `{}`)))
	if c.upToDate(drifted.(*unstructured.Unstructured), hash) {
		t.Fatal("a trimmed copy whose limbo field set changed is up to date")
	}
}

func TestKeyOf(t *testing.T) {
	const uid = "0f8e2a6c-1b3d-4e5f-8a9b-0c1d2e3f4a5b"
	want := uidKey{0x0f, 0x8e, 0x2a, 0x6c, 0x1b, 0x3d, 0x4e, 0x5f, 0x8a, 0x9b, 0x0c, 0x1d, 0x2e, 0x3f, 0x4a, 0x5b}
	if got := keyOf(uid); got != want {
		t.Fatalf("keyOf(%s) = %x, want its 128 bits %x", uid, got, want)
	}
	// Every other spelling falls back to a hash: no two different UIDs share a
	// key through the parse.
	others := []types.UID{
		"0F8E2A6C-1B3D-4E5F-8A9B-0C1D2E3F4A5B",   // upper case
		"0f8e2a6c1b3d4e5f8a9b0c1d2e3f4a5b",       // no dashes
		"{0f8e2a6c-1b3d-4e5f-8a9b-0c1d2e3f4a5b}", // braces
		"0f8e2a6c-1b3d-4e5f-8a9b-0c1d2e3f4a5g",   // not hex
		"0f8e2a6c-1b3d-4e5f-8a9b_0c1d2e3f4a5b",   // a dash missing
		"u1",
		"",
	}
	seen := map[uidKey]types.UID{want: uid}
	for _, o := range others {
		k := keyOf(o)
		if prev, dup := seen[k]; dup {
			t.Errorf("keyOf(%q) = keyOf(%q)", o, prev)
		}
		seen[k] = o
		if keyOf(o) != k {
			t.Errorf("keyOf(%q) is not stable", o)
		}
	}
}

// A restarted process remembers no apply; the status of the Bundle recorded the
// digest of each object found applied (appliedDigest), and an object still at
// that resourceVersion, whose desired object is the same, is up to date without
// an apply. Anything else about it — a write since, another desired object,
// another object of the name — needs the apply.
func TestAppliedCacheSeed(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v"}}}
	hash := hashOf(desired)
	changed := desired.DeepCopy()
	changed.Object["data"] = map[string]any{"k": "w"}
	ours := `{"f:data":{"f:k":{}}}`
	applied := withManagedFields(desired, entry("limbo", metav1.ManagedFieldsOperationApply, ours))
	applied.SetUID("3f1c2a4e-8b6d-4e0f-9a7b-1c2d3e4f5a6b")
	applied.SetResourceVersion("41")
	recorded := appliedDigest(hash, applied)
	if recorded == "" || len(recorded) != 22 {
		t.Fatalf("appliedDigest = %q, want 22 characters (128 bits, base64)", recorded)
	}

	// A Secret's digest would let whoever reads the status test guesses of its
	// data: none is recorded.
	secret := applied.DeepCopy()
	secret.SetKind("Secret")
	if got := appliedDigest(hashOf(secret), secret); got != "" {
		t.Errorf("appliedDigest of a Secret = %q, want none", got)
	}

	at := func(version string, uid types.UID) *unstructured.Unstructured {
		u := applied.DeepCopy()
		u.SetResourceVersion(version)
		u.SetUID(uid)
		return u
	}
	cases := []struct {
		name     string
		live     *unstructured.Unstructured
		hash     string
		recorded string
		want     bool
	}{
		{"the copy the status recorded", applied, hash, recorded, true},
		{"cached copy of it (managedFields trimmed to a digest)", trimmed(t, applied), hash, recorded, true},
		{"written since (another resourceVersion)", at("42", applied.GetUID()), hash, recorded, false},
		{"another object of the name", at("41", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"), hash, recorded, false},
		{"the desired object changed", applied, hashOf(changed), recorded, false},
		{"nothing recorded", applied, hash, "", false},
		{"limbo's field set is gone", withManagedFields(applied), hash, recorded, false},
		// A generator's entry records the digests of its objects together.
		{"one of a generator's objects", applied, hash, joinDigests([]string{appliedDigest(hash, at("7", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")), recorded}), true},
		{"a generator's object written since", at("42", applied.GetUID()), hash, joinDigests([]string{appliedDigest(hash, at("7", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")), recorded}), false},
		{"a generator's object past the digests recorded", applied, hash, joinDigests(append(slices.Repeat([]string{appliedDigest(hash, at("7", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"))}, maxGeneratedDigests), recorded)), false},
		{"a digest cut short", applied, hash, recorded[:21], false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c appliedCache
			c.seed(tc.live, tc.hash, func() string { return tc.recorded })
			if got := c.upToDate(tc.live, tc.hash); got != tc.want {
				t.Errorf("upToDate after seed = %v, want %v", got, tc.want)
			}
		})
	}

	// What this process remembers comes first: a seed does not undo an apply
	// it recorded since (of another desired object).
	var c appliedCache
	answer := withManagedFields(changed, entry("limbo", metav1.ManagedFieldsOperationApply, ours))
	answer.SetUID(applied.GetUID())
	answer.SetResourceVersion("41")
	c.record(answer, hashOf(changed), "")
	c.seed(applied, hash, func() string { t.Error("asked for the digest of an object this process remembers"); return recorded })
	if c.upToDate(applied, hash) {
		t.Error("a seed replaced what this process recorded of its own apply")
	}
	if !c.upToDate(answer, hashOf(changed)) {
		t.Error("this process's own apply is forgotten after a seed")
	}

	// An object made out of date on purpose (a kept delay still to drop)
	// stays so: forgotten, it was seeded again from the digest the status
	// holds, found up to date, and the kept delay stayed.
	var d appliedCache
	d.record(applied, hash, "")
	d.invalidate(applied.GetUID())
	d.seed(applied, hash, func() string { return recorded })
	if d.upToDate(applied, hash) {
		t.Error("an invalidated object is up to date after a seed from the status's digest")
	}
	d.record(applied, hash, "")
	if !d.upToDate(applied, hash) {
		t.Error("an invalidated object applied again is not up to date")
	}
}

// trimmed is u as the cache holds it (TrimForCache).
func trimmed(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := TrimForCache(u.DeepCopy())
	if err != nil {
		t.Fatalf("TrimForCache: %v", err)
	}
	return out.(*unstructured.Unstructured)
}

// A deleted object's records go with it, whoever deleted it: the namespace
// controller, the garbage collector after a foreground delete or a finalizer
// removed by hand, a user (the next pass makes it anew, under another UID).
// Before, only limbo's own deletes forgot them, and a controller that saw
// 10,000 Bundles a day come and go kept ~100,000 entries more each day.
func TestObjectDeletedForgetsItsRecords(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"k": "v"}}}
	hash := hashOf(desired)
	response := withManagedFields(desired, entry("limbo", metav1.ManagedFieldsOperationApply, `{"f:data":{"f:k":{}}}`))
	response.SetUID("u1")
	response.SetResourceVersion("2")
	r := &Reconciler{}
	r.applied.record(response, hash, "1") // an update: it replaced resourceVersion 1
	r.objectDeleted(response)
	r.applied.mu.RLock()
	defer r.applied.mu.RUnlock()
	if len(r.applied.m) != 0 || len(r.applied.replacing) != 0 {
		t.Errorf("records of the deleted object kept: %d applied, %d replacing", len(r.applied.m), len(r.applied.replacing))
	}
}

// A cached copy of an older generation than limbo's apply answered is
// superseded, whatever its resourceVersion: another writer's status update (the
// Deployment controller's, a rollout becoming Available) that landed between
// limbo's read and its apply reaches the cache after the apply, and was taken
// for current — the previous generation judged Ready, dependants and the orphan
// gate let go while the new one had not rolled out. A copy of the apply's
// generation, or one without a generation (a ConfigMap's), is superseded only
// when it is the very copy the apply replaced.
func TestAppliedCacheSupersededByGeneration(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "db"}, "spec": map[string]any{"replicas": int64(1)}}}
	hash := hashOf(desired)
	copyAt := func(rv string, generation int64) *unstructured.Unstructured {
		u := withManagedFields(desired, entry("limbo", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:replicas":{}}}`))
		u.SetUID("u1")
		u.SetResourceVersion(rv)
		u.SetGeneration(generation)
		return u
	}
	var c appliedCache
	answer := copyAt("102", 6)
	c.record(answer, hash, "100")
	c.judge(answer, limbov1alpha1.ResourceStatus{State: limbov1alpha1.ResourceInProgress, Reason: "LatestGenerationNotObserved"}, false)
	for _, tc := range []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"the copy the apply replaced", copyAt("100", 5), true},
		{"another writer's update of the old generation, cached after the apply", copyAt("101", 5), true},
		{"the answer", copyAt("102", 6), false},
		{"a later copy of the apply's generation", copyAt("103", 6), false},
		{"a later generation", copyAt("104", 7), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judged, ok := c.superseded(tc.live)
			if ok != tc.want {
				t.Fatalf("superseded = %v, want %v", ok, tc.want)
			}
			if ok && (judged == nil || judged.state != limbov1alpha1.ResourceInProgress) {
				t.Errorf("judged = %+v, want the applying pass's InProgress", judged)
			}
		})
	}
	// Without generations (a ConfigMap's), only the replaced copy.
	var cm appliedCache
	answer = copyAt("202", 0)
	cm.record(answer, hash, "200")
	if _, ok := cm.superseded(copyAt("201", 0)); ok {
		t.Error("a copy without a generation other than the replaced one is taken for superseded")
	}
	if _, ok := cm.superseded(copyAt("200", 0)); !ok {
		t.Error("the replaced copy without a generation is not superseded")
	}
}
