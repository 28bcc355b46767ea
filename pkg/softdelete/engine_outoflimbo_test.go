package softdelete_test

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	limbov1alpha1 "github.com/limbo-dev/limbo/pkg/apis/limbo/v1alpha1"
	"github.com/limbo-dev/limbo/pkg/softdelete"
)

// HasLimboMark sees each mark that OutOfLimboPatch removes, and only those: an
// object the patch was applied to has none left. The patch also removes the
// countdown's notes — expedite's (limbo.dev/expeditedFrom), a plugin item's
// owner (limbo.dev/pluginResource) — which are no marks: an object that
// carries one alone is not in limbo, and nothing is written for it.
func TestHasLimboMarkMatchesOutOfLimboPatch(t *testing.T) {
	patch := softdelete.OutOfLimboPatch()
	removed := slices.Concat(slices.Sorted(maps.Keys(patch["annotations"].(map[string]any))), slices.Sorted(maps.Keys(patch["labels"].(map[string]any))))
	want := []string{limbov1alpha1.AnnotationDeletionTimestamp, limbov1alpha1.AnnotationExpeditedFrom, limbov1alpha1.AnnotationPluginResource,
		limbov1alpha1.AnnotationReleased, limbov1alpha1.LabelPendingDeletion}
	if !slices.Equal(removed, want) {
		t.Errorf("OutOfLimboPatch removes %v, want the stamp, the notes, the released mark and the pending-deletion label: %v", removed, want)
	}
	for _, tc := range []struct {
		meta metav1.ObjectMeta
		want bool
	}{
		{metav1.ObjectMeta{Annotations: map[string]string{limbov1alpha1.AnnotationDeletionTimestamp: "x"}}, true},
		{metav1.ObjectMeta{Annotations: map[string]string{limbov1alpha1.AnnotationReleased: "x"}}, true},
		{metav1.ObjectMeta{Labels: map[string]string{limbov1alpha1.LabelPendingDeletion: "x"}}, true},
		{metav1.ObjectMeta{Annotations: map[string]string{limbov1alpha1.AnnotationExpeditedFrom: "x"}}, false},
		{metav1.ObjectMeta{Annotations: map[string]string{limbov1alpha1.AnnotationPluginResource: "a/b/c"}}, false},
		{metav1.ObjectMeta{
			Annotations: map[string]string{limbov1alpha1.AnnotationDeletionDelay: "1h", limbov1alpha1.AnnotationGeneratedBy: "settings"},
			Labels:      map[string]string{limbov1alpha1.LabelBundle: "shop"},
		}, false},
	} {
		if got := softdelete.HasLimboMark(&tc.meta); got != tc.want {
			t.Errorf("HasLimboMark(%v %v) = %v, want %v", tc.meta.Annotations, tc.meta.Labels, got, tc.want)
		}
	}
}
