package boundedtext_test

import (
	"testing"

	"github.com/limbo-dev/limbo/pkg/boundedtext"
)

// Cut keeps what fits and cuts the rest at a UTF-8 boundary, saying so; Join's
// cases are bundlespec's TestJoinBounded (JoinBounded is Join at MessageBudget).
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "a…"}, // "…" is 3 bytes
		{"éééé", 7, "éé…"},
		{"éééé", 6, "é…"}, // not half an é
	} {
		if got := boundedtext.Cut(tc.s, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
