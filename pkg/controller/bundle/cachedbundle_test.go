package bundle

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/sharedmeta"
)

// decodedBundle is Bundle name as the cache decodes it: from the API server's
// JSON, every string and list allocated on its own.
func decodedBundle(t *testing.T, name string) *limbov1alpha1.Bundle {
	t.Helper()
	b := &limbov1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-of-" + name),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
	for j := range 3 {
		res := fmt.Sprintf("cm-%d", j)
		b.Spec.Resources = append(b.Spec.Resources, limbov1alpha1.Resource{Name: res,
			Object: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-%s"}}`, name, res)}})
		b.Status.Resources = append(b.Status.Resources, limbov1alpha1.ResourceStatus{Name: res, State: limbov1alpha1.ResourceReady,
			Object: &limbov1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: name + "-" + res}})
	}
	b.Status.Conditions = []metav1.Condition{{Type: limbov1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "AllResourcesReady", Message: "3/3 resources are ready"}}
	b.Status.PendingDeletions = []limbov1alpha1.PendingDeletion{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: name + "-old", Resource: "old", Message: "waiting"}}
	b.Status.ManagedKinds = []limbov1alpha1.ManagedKind{{APIVersion: "v1", Kind: "ConfigMap"}}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	decoded := &limbov1alpha1.Bundle{}
	if err := json.Unmarshal(data, decoded); err != nil {
		t.Fatal(err)
	}
	return decoded
}

func TestBundleCacheTransform(t *testing.T) {
	transform := NewBundleCacheTransform(sharedmeta.New())
	cached := func(name string) (before, after *limbov1alpha1.Bundle) {
		b := decodedBundle(t, name)
		before = b.DeepCopy()
		out, err := transform(b)
		if err != nil {
			t.Fatal(err)
		}
		return before, out.(*limbov1alpha1.Bundle)
	}
	before, first := cached("a")
	_, second := cached("b")

	if first.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", first.ManagedFields)
	}
	before.ManagedFields = nil
	if !equality.Semantic.DeepEqual(before, first) {
		t.Errorf("the transform changed the Bundle:\nbefore %+v\nafter  %+v", before, first)
	}
	same := func(what, a, b string) {
		t.Helper()
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s: two Bundles each hold %q", what, a)
		}
	}
	same("namespace", first.Namespace, second.Namespace)
	same("resource name", first.Spec.Resources[1].Name, second.Spec.Resources[1].Name)
	same("resource state", string(first.Status.Resources[0].State), string(second.Status.Resources[2].State))
	same("object kind", first.Status.Resources[0].Object.Kind, second.Status.Resources[0].Object.Kind)
	same("condition message", first.Status.Conditions[0].Message, second.Status.Conditions[0].Message)
	same("pending deletion resource", first.Status.PendingDeletions[0].Resource, second.Status.PendingDeletions[0].Resource)
	same("managed kind", first.Status.ManagedKinds[0].Kind, second.Status.ManagedKinds[0].Kind)
	if first.Status.Resources[0].Object.Name == second.Status.Resources[0].Object.Name {
		t.Fatal("the two Bundles' objects have the same name")
	}

	for what, lc := range map[string][2]int{
		"spec.resources":          {len(first.Spec.Resources), cap(first.Spec.Resources)},
		"status.resources":        {len(first.Status.Resources), cap(first.Status.Resources)},
		"status.pendingDeletions": {len(first.Status.PendingDeletions), cap(first.Status.PendingDeletions)},
	} {
		if lc[0] != lc[1] {
			t.Errorf("%s: length %d, capacity %d", what, lc[0], lc[1])
		}
	}
}
