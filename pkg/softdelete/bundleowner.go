package softdelete

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
)

// IsBundleController tells whether ref is the controller reference to a
// limbo.dev Bundle, of any version. "Bundle" is a common kind name: another
// operator's Bundle is not limbo's, and a mere owner reference does not
// control. The engine, the Bundle controller and kubectl-limbo ask this one
// rule.
func IsBundleController(ref metav1.OwnerReference) bool {
	return ref.Controller != nil && *ref.Controller && refersToBundle(ref)
}

// BundleControllerOf is obj's controller owner reference when it is a
// limbo.dev Bundle, else nil.
func BundleControllerOf(obj metav1.Object) *metav1.OwnerReference {
	for _, ref := range obj.GetOwnerReferences() {
		if IsBundleController(ref) {
			return &ref
		}
	}
	return nil
}

// refersToBundle tells whether ref is to a limbo.dev Bundle, controller or not
// (an unparsable apiVersion is no Bundle's).
func refersToBundle(ref metav1.OwnerReference) bool {
	return schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind() == limbov1alpha1.BundleGVK.GroupKind()
}
