package bundle

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/sharedmeta"
)

var configMapKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// managedConfigMapJSON is a ConfigMap as the API server returns it after limbo's
// apply, with another manager's entry too.
const managedConfigMapJSON = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop","uid":"u-1","resourceVersion":"7",
"labels":{"limbo.dev/bundle":"shop"},
"managedFields":[
 {"manager":"limbo","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:limbo.dev/bundle":{}}},"f:data":{"f:k":{}}}},
 {"manager":"kubectl","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:other":{}}}}]},
"data":{"k":"v","other":"x"}}`

func TestMetadataOnlyKinds(t *testing.T) {
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want bool
	}{
		{configMapKind, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, false},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, false},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ConfigMap"}, false},
	} {
		if got := metadataOnly(tc.gvk); got != tc.want {
			t.Errorf("metadataOnly(%s) = %v, want %v", tc.gvk, got, tc.want)
		}
		_, partial := cachedObject(tc.gvk).(*metav1.PartialObjectMetadata)
		_, partialList := cachedList(tc.gvk).(*metav1.PartialObjectMetadataList)
		if partial != tc.want || partialList != tc.want {
			t.Errorf("%s: cached as metadata %v, listed as metadata %v, want %v", tc.gvk, partial, partialList, tc.want)
		}
	}
}

// The no-op check compares the digest of limbo's field set on the live copy
// with the one recorded from the apply's answer: a metadata-only cached copy
// must give the same digest as the full object.
func TestMetadataOnlyCopyKeepsLimbosFieldSet(t *testing.T) {
	full := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(managedConfigMapJSON), &full.Object); err != nil {
		t.Fatal(err)
	}
	var partial metav1.PartialObjectMetadata
	if err := json.Unmarshal([]byte(managedConfigMapJSON), &partial); err != nil {
		t.Fatal(err)
	}
	if _, err := TrimForCache(&partial); err != nil {
		t.Fatal(err)
	}
	if n := len(partial.ManagedFields); n != 1 || partial.ManagedFields[0].Manager != limbov1alpha1.FieldManager ||
		partial.ManagedFields[0].FieldsType != digestFieldsType || len(partial.ManagedFields[0].FieldsV1.GetRawString()) != 66 {
		t.Fatalf("the cached copy keeps managedFields %+v, want the digest of limbo's entry only", partial.ManagedFields)
	}
	// A patch computed from the cached copy encodes it.
	if _, err := json.Marshal(&partial); err != nil {
		t.Fatalf("the cached copy does not encode: %v", err)
	}
	live, err := asUnstructured(&partial, configMapKind)
	if err != nil {
		t.Fatal(err)
	}
	if live.GroupVersionKind() != configMapKind || live.GetUID() != "u-1" || live.GetResourceVersion() != "7" || live.GetLabels()[limbov1alpha1.LabelBundle] != "shop" {
		t.Errorf("the copy lost metadata: %v", live.Object)
	}
	if _, body := live.Object["data"]; body {
		t.Errorf("the metadata-only copy has a body: %v", live.Object)
	}
	if got, want := ownedFields(live), ownedFields(full); got == "" || got != want {
		t.Errorf("digest of limbo's field set: %q from the cached copy, %q from the full object", got, want)
	}
}

// countingReader answers Gets with its object and counts them.
type countingReader struct {
	client.Reader
	obj   *unstructured.Unstructured
	reads int
}

func (r *countingReader) Get(_ context.Context, key client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	r.reads++
	if r.obj == nil {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	r.obj.DeepCopyInto(out.(*unstructured.Unstructured))
	return nil
}

func TestBodiesReadOncePerResourceVersion(t *testing.T) {
	full := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(managedConfigMapJSON), &full.Object); err != nil {
		t.Fatal(err)
	}
	metadataCopy := func(rv, uid string) *unstructured.Unstructured {
		var partial metav1.PartialObjectMetadata
		if err := json.Unmarshal([]byte(managedConfigMapJSON), &partial); err != nil {
			t.Fatal(err)
		}
		partial.ResourceVersion, partial.UID = rv, types.UID(uid)
		u, err := asUnstructured(&partial, configMapKind)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	reader := &countingReader{obj: full.DeepCopy()}
	var b bodies
	ctx := context.Background()
	steps := []struct {
		name      string
		live      *unstructured.Unstructured
		wantReads int
		wantErr   bool
	}{
		{"a live object with its body (an apply's answer) is its own body", full, 0, false},
		{"then its metadata-only copy at that resourceVersion needs no read", metadataCopy("7", "u-1"), 0, false},
		{"a newer resourceVersion is read", metadataCopy("8", "u-1"), 1, false},
		{"and read once", metadataCopy("8", "u-1"), 1, false},
		{"a replaced object (another uid on the API server) is an error", metadataCopy("9", "u-2"), 2, true},
	}
	reader.obj.SetResourceVersion("8")
	for _, s := range steps {
		got, err := b.full(ctx, reader, s.live)
		if (err != nil) != s.wantErr {
			t.Fatalf("%s: error %v, want error %v", s.name, err, s.wantErr)
		}
		if err == nil && got.Object["data"] == nil {
			t.Errorf("%s: no body: %v", s.name, got.Object)
		}
		if reader.reads != s.wantReads {
			t.Errorf("%s: %d reads so far, want %d", s.name, reader.reads, s.wantReads)
		}
	}
	b.forget("u-1")
	if _, err := b.full(ctx, reader, metadataCopy("8", "u-1")); err != nil || reader.reads != 3 {
		t.Errorf("after forget: error %v, %d reads, want a new read (3)", err, reader.reads)
	}
}

// Two ConfigMaps of one Bundle share their label map and digest entry in the
// cache, and each copy still gives its own field set's digest: a third whose
// limbo field set drifted gets an entry of its own.
func TestCacheTransformSharesMetadata(t *testing.T) {
	transform := NewCacheTransform(sharedmeta.New())
	cached := func(name, uid, managedJSON string) *metav1.PartialObjectMetadata {
		t.Helper()
		var m metav1.PartialObjectMetadata
		if err := json.Unmarshal([]byte(managedJSON), &m); err != nil {
			t.Fatal(err)
		}
		m.Name, m.UID = name, types.UID(uid)
		out, err := transform(&m)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*metav1.PartialObjectMetadata)
	}
	drifted := strings.Replace(managedConfigMapJSON, `"f:data":{"f:k":{}}`, `"f:data":{}`, 1)
	if drifted == managedConfigMapJSON {
		t.Fatal("the drifted copy is the same object")
	}
	first, second := cached("a", "u-a", managedConfigMapJSON), cached("b", "u-b", managedConfigMapJSON)
	third := cached("c", "u-c", drifted)

	if first.Labels["limbo.dev/bundle"] != "shop" || second.Labels["limbo.dev/bundle"] != "shop" {
		t.Fatalf("labels lost: %v, %v", first.Labels, second.Labels)
	}
	if reflect.ValueOf(first.Labels).UnsafePointer() != reflect.ValueOf(second.Labels).UnsafePointer() {
		t.Error("two objects with the same labels each hold a label map")
	}
	if &first.ManagedFields[0] != &second.ManagedFields[0] {
		t.Error("two objects with the same field set each hold a digest entry")
	}
	if &first.ManagedFields[0] == &third.ManagedFields[0] {
		t.Error("an object whose field set drifted shares the digest of the others")
	}
	digest := func(m *metav1.PartialObjectMetadata) string {
		u, err := asUnstructured(m, configMapKind)
		if err != nil {
			t.Fatal(err)
		}
		return ownedFields(u)
	}
	full := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(managedConfigMapJSON), &full.Object); err != nil {
		t.Fatal(err)
	}
	if want := ownedFields(full); digest(first) != want || digest(second) != want {
		t.Error("a shared digest entry does not give the object's own field set")
	}
	if digest(third) == digest(first) {
		t.Error("the drifted object's digest is the others'")
	}
}
