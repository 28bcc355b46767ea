package softdelete

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Only limbo's Bundle, as controller, is a Bundle controller: "Bundle" is a
// common kind name (another operator's Bundle keeps its reference through a
// cancel), and a mere owner reference does not control.
func TestIsBundleController(t *testing.T) {
	for _, tc := range []struct {
		ref  metav1.OwnerReference
		want bool
	}{
		{metav1.OwnerReference{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", Controller: ptr.To(true)}, true},
		{metav1.OwnerReference{APIVersion: "limbo.dev/v1", Kind: "Bundle", Name: "shop", Controller: ptr.To(true)}, true},
		{metav1.OwnerReference{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", Controller: ptr.To(false)}, false},
		{metav1.OwnerReference{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop"}, false},
		{metav1.OwnerReference{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "Bundle", Name: "shop", Controller: ptr.To(true)}, false},
		{metav1.OwnerReference{APIVersion: "limbo.dev/v1alpha1", Kind: "Tombstone", Name: "shop", Controller: ptr.To(true)}, false},
	} {
		if got := IsBundleController(tc.ref); got != tc.want {
			t.Errorf("IsBundleController(%s %s controller=%v) = %v, want %v", tc.ref.APIVersion, tc.ref.Kind, tc.ref.Controller != nil && *tc.ref.Controller, got, tc.want)
		}
	}
}

// BundleControllerOf finds the Bundle's controller reference among others, and
// none when the Bundle only owns.
func TestBundleControllerOf(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}
	bundle := metav1.OwnerReference{APIVersion: "limbo.dev/v1alpha1", Kind: "Bundle", Name: "shop", UID: "u2", Controller: ptr.To(true)}
	owning := bundle
	owning.Controller = nil
	for _, tc := range []struct {
		refs []metav1.OwnerReference
		want string
	}{
		{[]metav1.OwnerReference{other, bundle}, "shop"},
		{[]metav1.OwnerReference{other, owning}, ""},
		{nil, ""},
	} {
		obj := &metav1.ObjectMeta{OwnerReferences: tc.refs}
		got := ""
		if ref := BundleControllerOf(obj); ref != nil {
			got = ref.Name
		}
		if got != tc.want {
			t.Errorf("BundleControllerOf(%v) = %q, want %q", tc.refs, got, tc.want)
		}
	}
}
