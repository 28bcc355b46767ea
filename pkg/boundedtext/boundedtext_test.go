package boundedtext_test

import (
	"strings"
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

// CutMiddle keeps both ends of what does not fit — what readers match at the
// start and at the end of a message — and cuts its middle at UTF-8
// boundaries, saying so.
func TestCutMiddle(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abcdefgh", 8, "abcdefgh"},
		{"abcdefghi", 8, "abc…hi"}, // "…" is 3 bytes; the head gets the odd byte
		{"abcdefghij", 9, "abc…hij"},
		{"ééééé", 9, "é…é"}, // not half an é at either end
		{"abcde", 3, "…"},
	} {
		if got := boundedtext.CutMiddle(tc.s, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("CutMiddle(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// Join keeps the items that fit, never goes past its budget, and says how many
// it left out (bundlespec's TestJoinBounded has the messages' cases).
func TestJoin(t *testing.T) {
	long := strings.Repeat("b", 30)
	for _, tc := range []struct {
		name   string
		items  []string
		budget int
		want   string
	}{
		{"all fit", []string{"a", "b", "c"}, 100, "a, b, c"},
		{"the first fits, two left out", []string{"aaaa", "bbbb", "cccc"}, 20, "aaaa, … and 2 more"},
		// ", … and 1 more" is 16 bytes: the first item is cut to leave room for it.
		{"the first cut, with room for the tail", []string{"aaaaaaaaaa", long}, 20, "a…, … and 1 more"},
		{"none", nil, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := boundedtext.Join(tc.items, ", ", tc.budget); got != tc.want || len(got) > tc.budget {
				t.Errorf("Join(%q, %d) = %q (%d bytes), want %q", tc.items, tc.budget, got, len(got), tc.want)
			}
		})
	}
}
