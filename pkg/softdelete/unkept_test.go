package softdelete

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUnkeptMarks(t *testing.T) {
	patch := map[string]any{"metadata": map[string]any{
		"annotations":     map[string]any{"limbo.dev/deletionTimestamp": "2026-11-30T10:00:00Z", "limbo.dev/released": nil},
		"labels":          map[string]any{"limbo.dev/pending-deletion": "true"},
		"resourceVersion": "7",
	}}
	kept := map[string]string{"limbo.dev/deletionTimestamp": "2026-11-30T10:00:00Z", "other": "x"}
	cases := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		want        []string
	}{
		{name: "kept as written, other marks beside", annotations: kept, labels: map[string]string{"limbo.dev/pending-deletion": "true", "app": "a"}},
		{name: "stamp dropped", annotations: map[string]string{}, labels: map[string]string{"limbo.dev/pending-deletion": "true"},
			want: []string{"has no annotation limbo.dev/deletionTimestamp"}},
		{name: "stamp rewritten, label dropped", annotations: map[string]string{"limbo.dev/deletionTimestamp": "2026-12-30T10:00:00Z"},
			want: []string{`has annotation limbo.dev/deletionTimestamp "2026-12-30T10:00:00Z", not "2026-11-30T10:00:00Z"`, "has no label limbo.dev/pending-deletion"}},
		{name: "a removed mark put back", annotations: map[string]string{"limbo.dev/deletionTimestamp": "2026-11-30T10:00:00Z", "limbo.dev/released": "x"},
			labels: map[string]string{"limbo.dev/pending-deletion": "true"}, want: []string{"still has annotation limbo.dev/released"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer := &metav1.ObjectMeta{Annotations: tc.annotations, Labels: tc.labels}
			if got := unkeptMarks(answer, patch); !slices.Equal(got, tc.want) {
				t.Errorf("unkeptMarks = %q, want %q", got, tc.want)
			}
		})
	}
	if got := unkeptMarks(&metav1.ObjectMeta{}, map[string]any{"metadata": map[string]any{"finalizers": []string{}}}); got != nil {
		t.Errorf("a patch of no labels or annotations: %q", got)
	}
}
