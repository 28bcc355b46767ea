package v1alpha1

import "testing"

// A done mark of any value but "" ends a plugin resource's teardown, with the
// warning beside it; another resource's marks do not.
func TestTeardownEnded(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		warning     string
		ended       bool
	}{
		{nil, "", false},
		{map[string]string{AnnotationTeardownStatePrefix + "gone": "{}"}, "", false},
		{map[string]string{AnnotationTeardownDonePrefix + "gone": ""}, "", false},
		{map[string]string{AnnotationTeardownDonePrefix + "gone": "true"}, "", true},
		{map[string]string{AnnotationTeardownDonePrefix + "gone": "yes"}, "", true},
		{map[string]string{AnnotationTeardownDonePrefix + "gone": "true", AnnotationTeardownWarningPrefix + "gone": "gave up: lb-1"}, "gave up: lb-1", true},
		{map[string]string{AnnotationTeardownDonePrefix + "other": "true", AnnotationTeardownWarningPrefix + "gone": "stale"}, "", false},
	} {
		warning, ended := TeardownEnded(tc.annotations, "gone")
		if warning != tc.warning || ended != tc.ended {
			t.Errorf("TeardownEnded(%v) = %q, %v; want %q, %v", tc.annotations, warning, ended, tc.warning, tc.ended)
		}
	}
}
