package softdelete_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// HasLimboMark sees each mark that OutOfLimboPatch removes, and only those: an
// object the patch was applied to has none left.
func TestHasLimboMarkMatchesOutOfLimboPatch(t *testing.T) {
	patch := softdelete.OutOfLimboPatch()
	var marked []metav1.ObjectMeta
	for key := range patch["annotations"].(map[string]any) {
		marked = append(marked, metav1.ObjectMeta{Annotations: map[string]string{key: "x"}})
	}
	for key := range patch["labels"].(map[string]any) {
		marked = append(marked, metav1.ObjectMeta{Labels: map[string]string{key: "x"}})
	}
	if len(marked) != 3 {
		t.Errorf("OutOfLimboPatch removes %d marks, want the stamp, the released mark and the pending-deletion label", len(marked))
	}
	for _, m := range marked {
		if !softdelete.HasLimboMark(&m) {
			t.Errorf("HasLimboMark(%v %v) = false", m.Annotations, m.Labels)
		}
	}
	other := metav1.ObjectMeta{
		Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationGeneratedBy: "settings"},
		Labels:      map[string]string{limbov1alpha1.LabelBundle: "shop"},
	}
	if softdelete.HasLimboMark(&other) {
		t.Errorf("HasLimboMark(%v %v) = true: none of them is a limbo mark", other.Annotations, other.Labels)
	}
}
